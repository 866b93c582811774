"""The Ack modules generated from idl/ by omniidl, and omniORB's bundled COS stubs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import cosnotify.corba
from cosnotify.corba import stubgen


class TestGeneratedStubs:
    def test_committed_output_is_current(self) -> None:
        """What omniidl makes from idl/ now is byte for byte what is committed."""
        stubgen.check(cosnotify.corba.GENERATED)

    def test_a_stale_file_is_found(self, tmp_path: Path) -> None:
        """An edited generated file makes the check fail and names the file."""
        copy = tmp_path / "generated"
        shutil.copytree(cosnotify.corba.GENERATED, copy)
        target = copy / "CosNotifyCommAck_idl.py"
        target.write_text(target.read_text() + "# edited\n")
        with pytest.raises(stubgen.StaleStubs) as caught:
            stubgen.check(copy)
        assert caught.value.differences == ["CosNotifyCommAck_idl.py"]

    def test_a_missing_module_is_found(self, tmp_path: Path) -> None:
        """A generated module that is not committed makes the check fail."""
        copy = tmp_path / "generated"
        shutil.copytree(cosnotify.corba.GENERATED, copy)
        shutil.rmtree(copy / "CosNotifyChannelAdminAck__POA")
        with pytest.raises(stubgen.StaleStubs) as caught:
            stubgen.check(copy)
        assert caught.value.differences == ["CosNotifyChannelAdminAck__POA/__init__.py"]


class TestImportNames:
    def test_ack_modules_import_by_idl_name(self) -> None:
        """CosNotifyCommAck and CosNotifyChannelAdminAck import by their IDL names."""
        import CosNotifyChannelAdminAck
        import CosNotifyChannelAdminAck__POA
        import CosNotifyCommAck
        import CosNotifyCommAck__POA

        assert CosNotifyCommAck.SequenceNumber == "SequenceNumber"
        assert CosNotifyCommAck.Acknowledgment == 1
        assert CosNotifyChannelAdminAck.StructuredProxyPushSupplierAck._NP_RepositoryId == (
            "IDL:omg.org/CosNotifyChannelAdminAck/StructuredProxyPushSupplierAck:1.0")
        assert hasattr(CosNotifyCommAck__POA, "SequencePullSupplierAck")
        assert hasattr(CosNotifyChannelAdminAck__POA, "SequenceProxyPullSupplierAck")

    def test_ack_modules_extend_the_bundled_cos_modules(self) -> None:
        """The generated interfaces derive from omniORB's own classes, not a second copy."""
        import CosNotifyChannelAdmin
        import CosNotifyChannelAdminAck
        import CosNotifyComm
        import CosNotifyCommAck

        assert CosNotifyCommAck.StructuredPushSupplierAck.__mro__[1] is (
            CosNotifyComm.StructuredPushSupplier)
        assert CosNotifyChannelAdminAck.SequenceProxyPushSupplierAck.__mro__[1] is (
            CosNotifyChannelAdmin.SequenceProxyPushSupplier)

    def test_bundled_modules_are_omniorbs(self) -> None:
        """The standard COS modules are omniORB's bundled stubs, one copy each."""
        import omniORB

        import CosNotification

        assert Path(CosNotification.__file__).parent.parent.name == "COS"
        descriptor = omniORB.findType("IDL:omg.org/CosNotification/StructuredEvent:1.0")
        assert descriptor[1] is CosNotification.StructuredEvent

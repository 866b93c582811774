"""Contact information: what LEASECONTRACT's Verb-URI may name.

Source: /work/shared/seeds/object-eventing-service.txt -- LEASECONTRACT: "This is
typically a string of the form 'tcp:<ip-address>:<port>' where <ip-address> and
<port> are the numeric IP address and port number of the client's incoming
notification receiving process"; the CONTRACT table's Contactinfo.
"""

from __future__ import annotations

import pytest

from cosnotify.protocols.oes.contacts import Contact, parse_contact


class TestParseContact:
    """tcp:<ip-address>:<port>, numeric."""

    @pytest.mark.parametrize(("text", "host", "port"), [
        ("tcp:127.0.0.1:9000", "127.0.0.1", 9000),
        ("tcp:[::1]:9000", "::1", 9000),
        ("tcp:10.0.0.7:1", "10.0.0.7", 1),
    ])
    def test_numeric_addresses(self, text: str, host: str, port: int) -> None:
        """IPv4, and IPv6 in brackets; the text comes back the same."""
        contact = parse_contact(text)
        assert contact == Contact(host, port) and contact.text == text

    @pytest.mark.parametrize("text", [None, "", "127.0.0.1:9000", "tcp:example.org:9000",
                                      "tcp:127.0.0.1", "tcp:127.0.0.1:", "tcp:127.0.0.1:0",
                                      "tcp:127.0.0.1:65536", "tcp:127.0.0.1:+80",
                                      "tcp:127.0.0.1:\u0661\u0662", "tcp:::1:9000"])
    def test_refused(self, text: str | None) -> None:
        """Anything else is refused (a 400 over the wire), with the reason."""
        with pytest.raises(ValueError, match="contact"):
            parse_contact(text)

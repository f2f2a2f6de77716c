"""Egress policy: which hosts and addresses httpCall, callEndpoint, fetchMedia and callAI may reach.

Pure code: parsing the allow and deny lists (``CHATFLOW_EGRESS_ALLOW``, ``CHATFLOW_EGRESS_DENY``)
and deciding about a host name and the addresses it resolved to. The HTTP side
(``runtime/outbound.py``: each ``Outbound`` carries its own policy) resolves every host itself,
checks every address with :meth:`EgressPolicy.check`, connects to a checked address (so a DNS
answer that changes between the check and the connection cannot redirect the request: no DNS
rebinding), and checks every redirect hop again.

Entries are comma- or whitespace-separated:

* an address or a CIDR: ``10.0.0.0/8``, ``169.254.169.254``, ``fd00:ec2::254``, ``fe80::/10``;
* a host name: ``api.example.com`` (exactly that name) or ``.example.com`` / ``*.example.com``
  (the name and every subdomain);
* ``default`` (deny list only): the built-in list :data:`DEFAULT_DENY`.

Rules: a request is refused when its host name matches a deny entry or *any* address it resolves
to lies in a denied network (deny always wins). With an empty allow list everything else is
allowed; with an allow list, the host name must match an allowed name or *every* address must lie
in an allowed network. An IPv6 address that carries an IPv4 address is checked as both: IPv4-mapped
(``::ffff:169.254.169.254``), NAT64 (``64:ff9b::a9fe:a9fe``), 6to4 (``2002:a9fe:a9fe::``) and
IPv4-compatible (``::169.254.169.254``) forms are denied whenever the IPv4 address is.

Profiles (``CHATFLOW_EGRESS_PROFILE``): ``development`` (the default) is the rules above.
``production`` also refuses every address in :data:`PRODUCTION_GUARDED` (loopback, private,
unique-local, CGNAT, link-local, "this host"), in each IPv6 form of an IPv4 one, unless the host
name or the address matches an entry of the allow list: the runtime's own Valkey, API and
metrics, and the private network around it, are out of an editor's reach. The deny list still
wins over the allow list.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .errors import ChatflowError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

#: Cloud metadata services and link-local ranges. Loopback stays allowed (tests, local dev):
#: add ``127.0.0.0/8,::1`` to ``CHATFLOW_EGRESS_DENY`` to close it (docs/security.md).
DEFAULT_DENY: tuple[str, ...] = (
    "0.0.0.0/8",  # "this host": 0.0.0.0 (and ::ffff:0.0.0.0) reach the runtime's own services
    "::/128",  # IPv6 unspecified address, the same
    "169.254.0.0/16",  # IPv4 link-local, incl. 169.254.169.254 (AWS, GCP, Azure, OpenStack...)
    "fe80::/10",  # IPv6 link-local
    "fd00:ec2::254",  # AWS metadata over IPv6
    "100.100.100.200",  # Alibaba Cloud metadata
    "metadata.google.internal",
    "metadata.goog",
)


#: What the ``production`` profile refuses unless the allow list names it.
PRODUCTION_GUARDED: tuple[str, ...] = (
    "0.0.0.0/8",  # "this host"
    "127.0.0.0/8",  # loopback: the runtime's Valkey, API and /metrics
    "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",  # private (RFC 1918)
    "100.64.0.0/10",  # carrier-grade NAT (RFC 6598): private networks of some clouds
    "169.254.0.0/16",  # link-local
    "::/128", "::1/128",  # unspecified, loopback
    "fc00::/7",  # unique-local (RFC 4193)
    "fe80::/10", "fec0::/10",  # link-local, the old site-local
)
PROFILES = ("development", "production")


class EgressDenied(ChatflowError):
    """Raised when the policy refuses a destination; ``str(exc)`` says which rule."""


def _split(spec: str | Iterable[str] | None) -> list[str]:
    if spec is None:
        return []
    items = spec.replace(",", " ").split() if isinstance(spec, str) else list(spec)
    return [i.strip() for i in items if i.strip()]


def normalise_host(host: str) -> str:
    """Lower case, no brackets, no trailing dot: ``[FE80::1]`` → ``fe80::1``."""
    return host.strip().strip("[]").rstrip(".").lower()


def as_address(host: str) -> IPAddress | None:
    """The address a host literal names, or None for a name."""
    try:
        return ipaddress.ip_address(normalise_host(host).split("%", 1)[0])
    except ValueError:
        return None


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052 well-known prefix
_V4_COMPATIBLE = ipaddress.IPv6Network("::/96")  # deprecated ::a.b.c.d (RFC 4291 2.5.5.1)
_NOT_COMPATIBLE = frozenset({ipaddress.IPv6Address("::"), ipaddress.IPv6Address("::1")})


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, NAT64, 6to4, compatible), if any."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64 or (address in _V4_COMPATIBLE and address not in _NOT_COMPATIBLE):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _effective(address: IPAddress) -> list[IPAddress]:
    """The address, plus the IPv4 address it carries if it is an IPv6 form of one."""
    if isinstance(address, ipaddress.IPv6Address):
        carried = embedded_ipv4(address)
        if carried is not None:
            return [address, carried]
    return [address]


@dataclass(frozen=True, slots=True)
class Rules:
    """One list: networks, exact host names and host suffixes (``.example.com``)."""

    networks: tuple[IPNetwork, ...] = ()
    names: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()

    @classmethod
    def parse(cls, entries: Sequence[str]) -> Rules:
        networks: list[IPNetwork] = []
        names: set[str] = set()
        suffixes: list[str] = []
        for entry in entries:
            text = normalise_host(entry)
            try:
                networks.append(ipaddress.ip_network(text, strict=False))
                continue
            except ValueError:
                pass
            if text.startswith("*."):
                text = text[1:]
            if not text or "/" in text or text == ".":
                raise ValueError(f"egress rule {entry!r} is neither an address, a CIDR nor a host")
            if text.startswith("."):
                suffixes.append(text)
                names.add(text[1:])
            else:
                names.add(text)
        return cls(tuple(networks), frozenset(names), tuple(suffixes))

    def __bool__(self) -> bool:
        return bool(self.networks or self.names)

    def host_rule(self, host: str) -> str | None:
        name = normalise_host(host)
        if name in self.names:
            return name
        return next((s for s in self.suffixes if name.endswith(s)), None)

    def address_rule(self, address: IPAddress) -> str | None:
        for candidate in _effective(address):
            for network in self.networks:
                if candidate.version == network.version and candidate in network:
                    return str(network)
        return None


@dataclass(frozen=True, slots=True)
class EgressPolicy:
    """Allow and deny lists; ``EgressPolicy()`` allows everything (no rules)."""

    allow: Rules = Rules()
    deny: Rules = Rules()
    guarded: Rules = Rules()  # the profile's ranges: denied unless the allow list matches
    profile: str = "development"

    @classmethod
    def parse(cls, allow: str | Iterable[str] | None = None,
              deny: str | Iterable[str] | None = "default",
              profile: str = "development") -> EgressPolicy:
        """From the settings' text; ``default`` in ``deny`` expands to :data:`DEFAULT_DENY`."""
        if profile not in PROFILES:
            raise ValueError(f"egress profile {profile!r} is neither of {', '.join(PROFILES)}")
        denied: list[str] = []
        for entry in _split(deny):
            denied.extend(DEFAULT_DENY if entry.lower() == "default" else [entry])
        guarded = Rules.parse(PRODUCTION_GUARDED) if profile == "production" else Rules()
        return cls(Rules.parse(_split(allow)), Rules.parse(denied), guarded, profile)

    def check_host(self, host: str) -> None:
        """Refuse a host name on the deny list before anything is resolved."""
        rule = self.deny.host_rule(host)
        if rule is not None:
            raise EgressDenied(f"host {normalise_host(host)} is denied by egress rule {rule}")

    def check(self, host: str, addresses: Sequence[IPAddress]) -> None:
        """Raise :class:`EgressDenied` unless the host and every address it resolved to pass."""
        self.check_host(host)
        name = normalise_host(host)
        if not addresses:
            raise EgressDenied(f"host {name} resolved to no address")
        for address in addresses:
            rule = self.deny.address_rule(address)
            if rule is not None:
                raise EgressDenied(f"host {name} resolves to {address}, denied by egress rule {rule}")
        if self.guarded:
            self._check_guarded(host, addresses)
        if not self.allow or self.allow.host_rule(host) is not None:
            return
        outside = [a for a in addresses if self.allow.address_rule(a) is None]
        if outside:
            raise EgressDenied(f"host {name} ({outside[0]}) is not on the egress allow list")

    def _check_guarded(self, host: str, addresses: Sequence[IPAddress]) -> None:
        if self.allow.host_rule(host) is not None:
            return
        for address in addresses:
            rule = self.guarded.address_rule(address)
            if rule is not None and self.allow.address_rule(address) is None:
                raise EgressDenied(
                    f"host {normalise_host(host)} resolves to {address} ({rule}), which the "
                    f"{self.profile} egress profile denies; to reach it, add the host or a CIDR "
                    "to CHATFLOW_EGRESS_ALLOW")


#: The policy of settings that name no lists: metadata and link-local denied (DEFAULT_DENY).
DEFAULT_POLICY = EgressPolicy.parse()

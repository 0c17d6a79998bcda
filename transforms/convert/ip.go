package convert

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// IPv4, IPv6.
//
// IPv4 accepts a JSON string in dotted-decimal form, "192.168.0.1" (no leading zeros, as Go's
// net/netip reads it). IPv6 accepts a JSON string holding any RFC 4291 text form ("2001:db8::1",
// "::ffff:192.168.0.1"), and also an IPv4 address, stored as its IPv4-mapped IPv6 address
// (::ffff:a.b.c.d), as ClickHouse's IPv6 type does.
// Errors: anything else, including numbers, an IPv6 address into IPv4, zones ("fe80::1%eth0"),
// CIDR prefixes ("10.0.0.0/8") and surrounding space.
//
// RowBinary: IPv4 as a little-endian UInt32 (so 192.168.0.1 is the bytes 01 00 a8 c0); IPv6 as
// its 16 bytes in network order (RowBinary format docs, "IPv4", "IPv6").

type ipv4Encoder struct{}

func (ipv4Encoder) encode(dst []byte, v value, c *Converter) ([]byte, error) {
	a, err := ipText(v, c, "IPv4", "a dotted-decimal string such as \"192.168.0.1\"")
	if err != nil {
		return dst, err
	}
	if !a.Is4() {
		return dst, errValue(v, "is not an IPv4 address; IPv4 takes a dotted-decimal string such as \"192.168.0.1\"")
	}
	b := a.As4()
	return binary.LittleEndian.AppendUint32(dst, binary.BigEndian.Uint32(b[:])), nil
}

type ipv6Encoder struct{}

func (ipv6Encoder) encode(dst []byte, v value, c *Converter) ([]byte, error) {
	a, err := ipText(v, c, "IPv6", "a string such as \"2001:db8::1\" or \"192.168.0.1\"")
	if err != nil {
		return dst, err
	}
	b := a.As16()
	return append(dst, b[:]...), nil
}

// ipText parses a string value as an IP address without a zone.
func ipText(v value, c *Converter, typ, takes string) (netip.Addr, error) {
	if v.kind != kindString {
		return netip.Addr{}, errValue(v, fmt.Sprintf("is %s; %s takes %s", v.kind, typ, takes))
	}
	s, err := c.text(v)
	if err != nil {
		return netip.Addr{}, errValue(v, err.Error())
	}
	a, err := netip.ParseAddr(string(s))
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, errValue(v, fmt.Sprintf("is not an %s address; %s takes %s", typ, typ, takes))
	}
	return a, nil
}

func (ipv4Encoder) size() int { return 4 }

// column decodes a little-endian UInt32 into []netip.Addr.
func (ipv4Encoder) column(wrap shape) Column {
	return fixedColumn(wrap, 4, func(b []byte) netip.Addr {
		var a [4]byte
		binary.BigEndian.PutUint32(a[:], binary.LittleEndian.Uint32(b))
		return netip.AddrFrom4(a)
	})
}

func (ipv6Encoder) size() int { return 16 }

// column decodes 16 bytes in network order into []netip.Addr (always the 16-byte form).
func (ipv6Encoder) column(wrap shape) Column {
	return fixedColumn(wrap, 16, func(b []byte) netip.Addr { return netip.AddrFrom16([16]byte(b[:16])) })
}

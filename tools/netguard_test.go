package tools

import (
	"net/netip"
	"testing"
)

func TestBlockedAddr(t *testing.T) {
	tests := []struct {
		addr    string
		blocked bool
	}{
		// IPv4 special-purpose ranges.
		{"0.0.0.0", true}, {"0.1.2.3", true},
		{"10.1.2.3", true},
		{"100.64.0.1", true}, {"100.127.255.254", true}, {"100.128.0.1", false},
		{"127.0.0.1", true}, {"127.255.0.1", true},
		{"169.254.169.254", true},
		{"172.16.0.1", true}, {"172.31.255.255", true}, {"172.32.0.1", false},
		{"192.0.0.1", true}, {"192.0.0.170", true},
		{"192.0.2.1", true},
		{"192.88.99.1", true},
		{"192.168.1.1", true},
		{"198.18.0.1", true}, {"198.19.255.255", true}, {"198.20.0.1", false}, {"198.17.255.255", false},
		{"198.51.100.7", true},
		{"203.0.113.9", true},
		{"224.0.0.1", true}, {"239.255.255.250", true},
		{"240.0.0.1", true}, {"255.255.255.255", true},
		// Public IPv4.
		{"93.184.216.34", false}, {"8.8.8.8", false}, {"1.1.1.1", false}, {"192.0.3.1", false}, {"223.255.255.1", false},

		// IPv4-mapped IPv6: judged by the IPv4 address.
		{"::ffff:127.0.0.1", true}, {"::ffff:10.0.0.1", true}, {"::ffff:169.254.169.254", true},
		{"::ffff:198.18.0.1", true}, {"::ffff:240.0.0.1", true}, {"::ffff:8.8.8.8", false},
		// NAT64 well-known prefix: judged by the IPv4 address.
		{"64:ff9b::10.0.0.1", true}, {"64:ff9b::127.0.0.1", true}, {"64:ff9b::a9fe:a9fe", true},
		{"64:ff9b::100.64.0.1", true}, {"64:ff9b::8.8.8.8", false}, {"64:ff9b::5db8:d822", false},
		// Local-use NAT64 and 6to4 carry an IPv4 address too, but are refused outright.
		{"64:ff9b:1::a00:1", true}, {"64:ff9b:1::808:808", true},
		{"2002:a00:1::1", true}, {"2002:808:808::1", true},

		// IPv6 special-purpose ranges.
		{"::", true}, {"::1", true}, {"::10.0.0.1", true}, {"::8.8.8.8", true}, {"::ffff:0:808:808", true},
		{"100::1", true},
		{"2001::1", true}, {"2001:0:4136:e378:8000:63bf:3fff:fdd2", true}, {"2001:2::1", true}, {"2001:1ff::1", true},
		{"2001:db8::1", true},
		{"3fff::1", true}, {"3fff:fff::1", true},
		{"5f00::1", true},
		{"fc00::1", true}, {"fd00::1", true},
		{"fe80::1", true}, {"fe80::1%eth0", true}, {"febf::1", true},
		{"fec0::1", true},
		{"ff02::1", true}, {"ff0e::1", true},
		{"4000::1", true}, {"c000::1", true}, // outside 2000::/3: not allocated for the internet
		// Public IPv6.
		{"2606:4700::1111", false}, {"2001:4860:4860::8888", false}, {"2001:200::1", false}, {"2a00:1450::1", false},
		{"2c0f:fb50::1", false}, {"2003::1", false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			if got := blockedAddr(netip.MustParseAddr(tt.addr)); got != tt.blocked {
				t.Errorf("blockedAddr(%s) = %v, want %v", tt.addr, got, tt.blocked)
			}
		})
	}
	if blockedAddr(netip.Addr{}) != true {
		t.Error("the zero Addr is not blocked")
	}
}

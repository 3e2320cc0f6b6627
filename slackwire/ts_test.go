package slackwire

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

func TestParseTS(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1700000000.000100", 1700000000_000100, true},
		{"1.5", 1_500000, true},
		{"1.000010", 1_000010, true},
		{"1.05", 1_050000, true},
		{"1700000000", 1700000000_000000, true},
		{"0", 0, true},
		{"0.000001", 1, true},
		{"999999999999.999999", 999999999999_999999, true},
		{"", 0, false},
		{".5", 0, false},
		{"1.", 0, false},
		{"1.1234567", 0, false},
		{"1.-1", 0, false},
		{"-1.000001", 0, false},
		{"+1.000001", 0, false},
		{" 1.000001", 0, false},
		{"1.000001 ", 0, false},
		{"1.2.3", 0, false},
		{"1e3.000000", 0, false},
		{"1000000000000.000000", 0, false}, // 13 digits of seconds
		{"abc", 0, false},
	} {
		got, err := ParseTS(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseTS(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestCompareTS(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"1.5", "1.000010", 1}, // the fraction is padded: .500000 > .000010
		{"1.000010", "1.5", -1},
		{"1700000000.000200", "1700000000.000100", 1},
		{"1700000000.000100", "1700000000.000100", 0},
		{"1700000000.1", "1700000000.100000", 0},
		{"1700000001.000000", "1700000000.999999", 1},
		{"1700000000", "1700000000.000000", 0},
		{"9.000000", "10.000000", -1}, // not by text
		{"garbage", "0.000000", -1},   // what does not parse sorts first
		{"0.000000", "garbage", 1},
		{"a", "b", -1},
		{"", "", 0},
	} {
		if got := CompareTS(tt.a, tt.b); got != tt.want {
			t.Errorf("CompareTS(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := CompareTS(tt.b, tt.a); got != -tt.want {
			t.Errorf("CompareTS(%q, %q) = %d, want %d", tt.b, tt.a, got, -tt.want)
		}
	}
}

func TestAfter(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"1.5", "1.000010", true},
		{"1.000010", "1.5", false},
		{"1700000000.000200", "1700000000.000100", true},
		{"1700000000.000100", "1700000000.000100", false},
		{"1700000000.000100", "", false}, // a check that cannot be made says no
		{"", "1700000000.000100", false},
		{"x", "y", false},
	} {
		if got := After(tt.a, tt.b); got != tt.want {
			t.Errorf("After(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestIsMessageTS(t *testing.T) {
	for in, want := range map[string]bool{
		"1714572202.000100": true, "1.5": true, "1714572202": false, "1714572202.": false,
		"1714572202.0001000": false, "p1714572202000100": false, "": false,
	} {
		if got := IsMessageTS(in); got != want {
			t.Errorf("IsMessageTS(%q) = %v, want %v", in, got, want)
		}
	}
}

// randomTS makes timestamps in every shape ParseTS accepts, and some it refuses.
func randomTS(r *rand.Rand) string {
	sec := fmt.Sprint(r.IntN(3)) // few seconds values, so that ties on seconds are common
	if r.IntN(4) == 0 {
		sec = fmt.Sprint(r.Int64N(1e12))
	}
	switch r.IntN(6) {
	case 0:
		return sec
	case 1:
		return sec + "." + []string{"x", "", "1234567", "-1"}[r.IntN(4)]
	default:
		n := 1 + r.IntN(6)
		return sec + "." + fmt.Sprintf("%0*d", n, r.IntN(pow10(n)))
	}
}

func pow10(n int) int {
	p := 1
	for range n {
		p *= 10
	}
	return p
}

// CompareTS agrees with comparing the parsed values whenever both parse, is antisymmetric and
// transitive.
func TestCompareTSProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 1))
	for range 20000 {
		a, b, c := randomTS(r), randomTS(r), randomTS(r)
		ab, ba := CompareTS(a, b), CompareTS(b, a)
		if ab != -ba {
			t.Fatalf("CompareTS(%q, %q) = %d but reversed %d", a, b, ab, ba)
		}
		pa, errA := ParseTS(a)
		pb, errB := ParseTS(b)
		if errA == nil && errB == nil {
			want := 0
			if pa < pb {
				want = -1
			} else if pa > pb {
				want = 1
			}
			if ab != want {
				t.Fatalf("CompareTS(%q, %q) = %d, parsed values say %d", a, b, ab, want)
			}
			if After(a, b) != (want > 0) {
				t.Fatalf("After(%q, %q) = %v, parsed values say %d", a, b, After(a, b), want)
			}
		}
		if ab <= 0 && CompareTS(b, c) <= 0 && CompareTS(a, c) > 0 {
			t.Fatalf("not transitive: %q <= %q <= %q but CompareTS(a, c) > 0", a, b, c)
		}
	}
}

func FuzzCompareTS(f *testing.F) {
	for _, s := range [][2]string{{"1.5", "1.000010"}, {"1700000000.000100", "1700000000"}, {"x", "1.0"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if CompareTS(a, b) != -CompareTS(b, a) {
			t.Fatalf("CompareTS(%q, %q) is not antisymmetric", a, b)
		}
		pa, errA := ParseTS(a)
		pb, errB := ParseTS(b)
		if errA == nil && errB == nil && (CompareTS(a, b) > 0) != (pa > pb) {
			t.Fatalf("CompareTS(%q, %q) = %d, parsed %d and %d", a, b, CompareTS(a, b), pa, pb)
		}
	})
}

// oldParse is the parser the activities and the local workspace had (the same but for the error). On
// every timestamp ParseTS accepts it gave the same value; it also let through garbage ParseTS refuses.
func oldParse(ts string) (int64, error) {
	sec, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return 0, err
	}
	frac = (frac + "000000")[:6]
	f, err := strconv.ParseInt(frac, 10, 64)
	if err != nil {
		return 0, err
	}
	return s*1_000_000 + f, nil
}

func TestParseTSMatchesReplacedCopies(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 3))
	for range 20000 {
		ts := randomTS(r)
		got, err := ParseTS(ts)
		if err != nil {
			continue
		}
		if want, err := oldParse(ts); err != nil || got != want {
			t.Fatalf("ParseTS(%q) = %d, the replaced copy gave %d, %v", ts, got, want, err)
		}
	}
	for _, garbage := range []string{"1.-1", "-1.000001", "+1", "1.1234567"} {
		if _, err := oldParse(garbage); err != nil {
			t.Errorf("the old parser refused %q too", garbage)
		}
	}
}

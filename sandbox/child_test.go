package sandbox

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

func encodedLen(t *testing.T, s string) int {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // as Main encodes the result
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return b.Len() - 3 // the quotes and the newline
}

// fitJSON never undercounts what the encoder writes, whatever the bytes (invalid UTF-8, which a
// script cannot print but a Go caller could, included), and cuts only between characters.
func TestFitJSONBoundsTheEncoding(t *testing.T) {
	pieces := []string{"a", "<", ">", "&", "\"", "\\", "\n", "\t", "\x01", "\x1f", "\x7f", "\u2028", "\u2029",
		"é", "日", "🙂", "\xff", "\xe2\x80", "\xed\xa0\x80", "\ufffd"}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		var sb strings.Builder
		for j := rng.IntN(200); j > 0; j-- {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s, budget := sb.String(), rng.IntN(400)
		n, cost := fitJSON(s, budget)
		if cost > budget {
			t.Fatalf("%q, budget %d: cost %d", s, budget, cost)
		}
		if got := encodedLen(t, s[:n]); got > cost {
			t.Fatalf("%q: counted %d, encoded %d", s[:n], cost, got)
		}
		if n < len(s) && n > 0 && !strings.HasPrefix(s, s[:n]) {
			t.Fatal("not a prefix")
		}
	}
	// The worst cases, 64 KB budget: never more than the budget, and "<" is not penalized.
	for _, tc := range []struct {
		unit string
		want int // bytes kept of 64 KB
	}{{"<", 65536}, {"\x01", 65536 / 6}, {"\xff", 65536 / 6}, {"\u2028", 65536 / 6 * 3}} {
		s := strings.Repeat(tc.unit, 70000)
		n, _ := fitJSON(s, 65536)
		if n != tc.want || encodedLen(t, s[:n]) > 65536 {
			t.Errorf("%q: kept %d bytes (encoded %d), want %d", tc.unit, n, encodedLen(t, s[:n]), tc.want)
		}
	}
}

func TestConsoleKeepsAPrefix(t *testing.T) {
	c := &console{max: 10}
	c.write("\x01")     // 6
	c.write("abcdefgh") // only 4 fit
	c.write("z")        // would fit by itself, but the output must stay a prefix
	if c.buf.String() != "\x01abcd" || c.dropped != 5 || !c.full {
		t.Fatalf("kept %q, dropped %d", c.buf.String(), c.dropped)
	}
}

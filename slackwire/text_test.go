package slackwire

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCuts(t *testing.T) {
	for _, tt := range []struct {
		s                       string
		n                       int
		head, ellipsis, clipped string
	}{
		{"hello", 10, "hello", "hello", "hello"},
		{"hello", 5, "hello", "hello", "hello"},
		{"hello", 4, "hell", "hell…", "hel…"},
		{"hello", 1, "h", "h…", "…"},
		{"hello", 0, "", "…", ""},
		{"", 0, "", "", ""},
		{"héllo wörld", 7, "héllo w", "héllo w…", "héllo …"}, // runes, not bytes; no trimming
		{"日本語テキスト", 3, "日本語", "日本語…", "日本…"},
	} {
		if got := Head(tt.s, tt.n); got != tt.head {
			t.Errorf("Head(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.head)
		}
		if got := HeadEllipsis(tt.s, tt.n); got != tt.ellipsis {
			t.Errorf("HeadEllipsis(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.ellipsis)
		}
		if got := Clip(tt.s, tt.n); got != tt.clipped {
			t.Errorf("Clip(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.clipped)
		}
	}
}

// Clip keeps within a hard limit; HeadEllipsis goes one over it.
func TestCutLengths(t *testing.T) {
	s := strings.Repeat("é", MaxSectionChars+10)
	if n := utf8.RuneCountInString(Clip(s, MaxSectionChars)); n != MaxSectionChars {
		t.Errorf("Clip gave %d characters, want %d", n, MaxSectionChars)
	}
	if n := utf8.RuneCountInString(HeadEllipsis(s, MaxSectionChars)); n != MaxSectionChars+1 {
		t.Errorf("HeadEllipsis gave %d characters, want %d", n, MaxSectionChars+1)
	}
}

func TestSubtypes(t *testing.T) {
	for _, tt := range []struct {
		subtype         string
		person, content bool
	}{
		{"", true, true},
		{"file_share", true, true},
		{"thread_broadcast", true, true},
		{"me_message", true, true},
		{"bot_message", false, true},
		{"message_changed", false, false},
		{"message_deleted", false, false},
		{"channel_join", false, false},
	} {
		if got := IsPersonSubtype(tt.subtype); got != tt.person {
			t.Errorf("IsPersonSubtype(%q) = %v", tt.subtype, got)
		}
		if got := IsContentSubtype(tt.subtype); got != tt.content {
			t.Errorf("IsContentSubtype(%q) = %v", tt.subtype, got)
		}
	}
}

// The cuts replaced copies that workflow code ran; these are those copies, and the cuts must give
// byte-identical results so that recorded workflows replay.
func oldHead(s string, n int) string { // workflows' cut, workflows/agent's head
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}

func oldHeadEllipsis(s string, n int) string { // activities' truncate, tools' cutRunes, inline cuts
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

func oldClip(s string, n int) string { // activities' clipSlackText, the gateway's lane summary
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func TestCutsMatchReplacedCopies(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 2))
	alphabet := []rune("ab é日\n\t🙂")
	for range 5000 {
		rs := make([]rune, r.IntN(12))
		for i := range rs {
			rs[i] = alphabet[r.IntN(len(alphabet))]
		}
		s := string(rs)
		if !utf8.ValidString(s) {
			t.Fatal("bad input")
		}
		n := r.IntN(14)
		if got, want := Head(s, n), oldHead(s, n); got != want {
			t.Fatalf("Head(%q, %d) = %q, the replaced copy gave %q", s, n, got, want)
		}
		if got, want := HeadEllipsis(s, n), oldHeadEllipsis(s, n); got != want {
			t.Fatalf("HeadEllipsis(%q, %d) = %q, the replaced copy gave %q", s, n, got, want)
		}
		if n > 0 { // the old copy panicked for n <= 0 on a long s
			if got, want := Clip(s, n), oldClip(s, n); got != want {
				t.Fatalf("Clip(%q, %d) = %q, the replaced copy gave %q", s, n, got, want)
			}
		}
	}
}

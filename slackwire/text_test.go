package slackwire

import (
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

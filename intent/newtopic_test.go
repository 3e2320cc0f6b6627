package intent

import "testing"

func TestNewTopic(t *testing.T) {
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"new question: what's the weather in Paris?", true},
		{"<@ULUCY> unrelated, but can you check the deploy?", true},
		{"Forget that, can you summarize the incident instead", true},
		{"actually, different question: who is on call?", true},
		{"hmm something else: book the room", true},
		{"Q3, and send it to Bob", false},
		{"use the EU numbers", false},
		{"yes", false},
		{"the second one", false},
		{"new", false},
		{"", false},
	} {
		if got := NewTopic(tc.text); got != tc.want {
			t.Errorf("NewTopic(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

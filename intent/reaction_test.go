package intent

import (
	"slices"
	"testing"
)

// slackEmoji are standard Slack emoji names Reaction may return (besides mirrored custom emoji).
var slackEmoji = []string{
	"zap", "bug", "rocket", "bar_chart", "mag", "computer", "calendar", "email", "memo", "thinking_face",
	"eyes", "wave", "heart", "raised_hands", "joy", "+1", "ok_hand",
}

func TestReaction(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		// The Add key form's message has no Slack message to react to.
		{"I added the key for `billing`.", ""},
		// Fast path, control, approval.
		{"hi lucy", "wave"},
		{"good morning!", "wave"},
		{"thanks!", "heart"},
		{"thank you so much 🙏", "heart"},
		{"great job", "raised_hands"},
		{"ok", "+1"},
		{"lol", "joy"},
		{"cancel that", "ok_hand"},
		{"yes, create it", "+1"},
		// Topics.
		{"URGENT: the checkout page is broken", "zap"},
		{"need this asap", "zap"},
		{"prod is down!!", "zap"},
		{"there's a bug in the signup form", "bug"},
		{"getting a 500 error on /login", "bug"},
		{"the import script is broken", "bug"},
		{"the nightly job crashed again", "bug"},
		{"can you deploy the landing page?", "rocket"},
		{"let's ship the release notes", "rocket"},
		{"pull the Q3 numbers", "bar_chart"},
		{"make a report of last week's signups", "bar_chart"},
		{"can you build a dashboard for churn", "bar_chart"},
		{"research our top competitors", "mag"},
		{"find the contract with Acme", "mag"},
		{"search Slack for the offsite thread", "mag"},
		{"write a python script to dedupe contacts", "computer"},
		{"what does this do ```x := 1```", "computer"},
		{"schedule a meeting with Sam", "calendar"},
		{"remind me tomorrow", "calendar"},
		{"email Sam the agenda", "email"},
		{"draft a welcome message for new hires", "memo"},
		{"summarize this thread", "memo"},
		// Questions and the rest.
		{"how are you?", "wave"},
		{"what's the weather tomorrow?", "thinking_face"},
		{"what do you think about remote work?", "thinking_face"},
		{"is it going to rain?", "thinking_face"},
		{"stop the EC2 instances in us-east-1", "eyes"},
		{"book a table for 4 at 7pm", "eyes"},
		{"", "eyes"},
		{"<@U0LUCY>", "eyes"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got := Reaction(tt.in)
			if got != tt.want {
				t.Errorf("Reaction(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if got != "" && !slices.Contains(slackEmoji, got) {
				t.Errorf("Reaction(%q) = %q, not in the list of Slack emoji names", tt.in, got)
			}
		})
	}
}

// TestReactionAgreesWithFastPath: the lane reacts with Reaction and then answers with FastPath;
// both must show the same emoji.
func TestReactionAgreesWithFastPath(t *testing.T) {
	for _, in := range []string{"hi", "thanks", "great job", "ok", "great", "lol", "bye", "👍", "good morning"} {
		fr, ok := FastPath(in, 0)
		if !ok {
			t.Fatalf("FastPath(%q) not ok", in)
		}
		if got := Reaction(in); got != fr.Reaction {
			t.Errorf("Reaction(%q) = %q, FastPath reaction %q", in, got, fr.Reaction)
		}
	}
}

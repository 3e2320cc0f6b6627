package intent

import "testing"

func TestFastPath(t *testing.T) {
	tests := []struct {
		in        string
		ok        bool
		kind      string
		reaction  string
		wantReply bool // a reply is posted (otherwise react only)
	}{
		// Greetings.
		{"hi", true, KindGreeting, "wave", true},
		{"Hi!", true, KindGreeting, "wave", true},
		{"hello lucy", true, KindGreeting, "wave", true},
		{"Hello Lucy :wave:", true, KindGreeting, "wave", true},
		{"hey", true, KindGreeting, "wave", true},
		{"heyyy", true, KindGreeting, "wave", true},
		{"hey there!", true, KindGreeting, "wave", true},
		{"<@U0LUCY> hi", true, KindGreeting, "wave", true},
		{"<@U0LUCY> 👋", true, KindGreeting, "wave", true},
		{"good morning", true, KindGreeting, "wave", true},
		{"Good morning everyone ☀️", true, KindGreeting, "wave", true},
		{"gm", true, KindGreeting, "wave", true},
		{"good evening lucy", true, KindGreeting, "wave", true},
		{"yo", true, KindGreeting, "wave", true},
		// Thanks and praise.
		{"thanks", true, KindThanks, "heart", true},
		{"thank you!", true, KindThanks, "heart", true},
		{"Thank you so much!!", true, KindThanks, "heart", true},
		{"ty", true, KindThanks, "heart", true},
		{"thx", true, KindThanks, "heart", true},
		{"thanksss", true, KindThanks, "heart", true},
		{"thanks lucy 🙏", true, KindThanks, "heart", true},
		{"ty :)", true, KindThanks, "heart", true},
		{"Thanks <@U0LUCY>! &lt;3", true, KindThanks, "heart", true},
		{"ok thanks", true, KindThanks, "heart", true},
		{"hey thanks!", true, KindThanks, "heart", true},
		{"thanks for the help", true, KindThanks, "heart", true},
		{"much appreciated", true, KindThanks, "heart", true},
		{"🙏", true, KindThanks, "heart", true},
		{"great job!", true, KindThanks, "raised_hands", true},
		{"love it", true, KindThanks, "raised_hands", true},
		// Acknowledgements.
		{"ok", true, KindAck, "+1", false},
		{"OK.", true, KindAck, "+1", false},
		{"okay", true, KindAck, "+1", false},
		{"k", true, KindAck, "+1", false},
		{"cool", true, KindAck, "+1", false},
		{"got it", true, KindAck, "+1", false},
		{"Got it!", true, KindAck, "+1", false},
		{"noted", true, KindAck, "+1", false},
		{"makes sense", true, KindAck, "+1", false},
		{"👍", true, KindAck, "+1", false},
		{":+1:", true, KindAck, "+1", false},
		{":thumbsup::skin-tone-5:", true, KindAck, "+1", false},
		{"great", true, KindAck, "raised_hands", true},
		{"perfect!", true, KindAck, "raised_hands", true},
		{"sounds good", true, KindAck, "raised_hands", true},
		{"lol", true, KindAck, "joy", false},
		{"hahaha", true, KindAck, "joy", false},
		{"😂", true, KindAck, "joy", false},
		{"bye!", true, KindAck, "wave", false},
		{"have a good weekend", true, KindAck, "wave", false},
		{":partyparrot:", true, KindAck, "partyparrot", false},
		{"🦄", true, KindAck, "eyes", false},
		// Not fast path: questions, requests, answers, control.
		{"hi, can you pull the Q3 numbers?", false, "", "", false},
		{"hi can you pull the Q3 numbers", false, "", "", false},
		{"hey lucy, you there?", false, "", "", false},
		{"hi?", false, "", "", false},
		{"thanks, but the chart is wrong", false, "", "", false},
		{"thanks! can you also add Q4", false, "", "", false},
		{"thanks for the report, now send it to Sam", false, "", "", false},
		{"ok, now do the same for EMEA", false, "", "", false},
		{"great, ship it", false, "", "", false},
		{"good morning, what's on my calendar today", false, "", "", false},
		{"morning standup notes", false, "", "", false},
		{"hello world program in go", false, "", "", false},
		{"how's it going?", false, "", "", false},
		{"what's up", false, "", "", false},
		{"yes", false, "", "", false},
		{"no", false, "", "", false},
		{"sure", false, "", "", false},
		{"no thanks", false, "", "", false},
		{"stop", false, "", "", false},
		{"nvm", false, "", "", false},
		{"status?", false, "", "", false},
		{":x:", false, "", "", false},
		{"🛑", false, "", "", false},
		{":-1:", false, "", "", false},
		{"thanks <https://example.com|link>", false, "", "", false},
		{"ok `ls`", false, "", "", false},
		{"", false, "", "", false},
		{"<@U0LUCY>", false, "", "", false},
		{"lucy", false, "", "", false},
		{"thanks thanks thanks thanks thanks thanks thanks thanks thanks thanks thanks", false, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := FastPath(tt.in, 42)
			if ok != tt.ok {
				t.Fatalf("FastPath(%q) ok = %v, want %v (got %+v)", tt.in, ok, tt.ok, got)
			}
			if !ok {
				if got != (FastReply{}) {
					t.Errorf("FastPath(%q) = %+v with ok false, want zero FastReply", tt.in, got)
				}
				return
			}
			if got.Kind != tt.kind || got.Reaction != tt.reaction || (got.Reply != "") != tt.wantReply {
				t.Errorf("FastPath(%q) = %+v, want kind %q reaction %q reply %v", tt.in, got, tt.kind, tt.reaction, tt.wantReply)
			}
		})
	}
}

func TestFastPathTimedGreeting(t *testing.T) {
	tests := []struct{ in, prefix string }{
		{"good morning", "Good morning"},
		{"morning!", "Good morning"},
		{"gm", "Good morning"},
		{"good afternoon", "Good afternoon"},
		{"good evening", "Good evening"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			for seed := range uint64(16) {
				got, _ := FastPath(tt.in, seed)
				if len(got.Reply) < len(tt.prefix) || got.Reply[:len(tt.prefix)] != tt.prefix {
					t.Fatalf("FastPath(%q, %d).Reply = %q, want it to start with %q", tt.in, seed, got.Reply, tt.prefix)
				}
			}
		})
	}
}

func TestFastPathDeterministic(t *testing.T) {
	for _, in := range []string{"hi", "thanks!", "great", "good morning", "ok", "great job"} {
		t.Run(in, func(t *testing.T) {
			for _, seed := range []uint64{0, 1, 2, 42, 1712345678, ^uint64(0)} {
				first, _ := FastPath(in, seed)
				for range 5 {
					if got, _ := FastPath(in, seed); got != first {
						t.Fatalf("FastPath(%q, %d) = %+v, then %+v", in, seed, first, got)
					}
				}
			}
		})
	}
}

// TestFastPathVariety checks that seeds spread over each pool, including the consecutive seeds that
// neighbouring Slack timestamps give.
func TestFastPathVariety(t *testing.T) {
	tests := []struct {
		in   string
		pool int
	}{
		{"hi", len(greetingReplies)},
		{"thanks", len(thanksReplies)},
		{"great job", len(praiseReplies)},
		{"great", len(warmReplies)},
		{"good morning", len(timedGreetingTails)},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			seen := map[string]bool{}
			for seed := range uint64(64) {
				got, _ := FastPath(tt.in, 1712345678000000+seed)
				seen[got.Reply] = true
			}
			if len(seen) != tt.pool {
				t.Errorf("FastPath(%q) over 64 consecutive seeds gave %d distinct replies, want all %d", tt.in, len(seen), tt.pool)
			}
			a, _ := FastPath(tt.in, 7)
			b, _ := FastPath(tt.in, 8)
			c, _ := FastPath(tt.in, 9)
			if a.Reply == b.Reply && b.Reply == c.Reply {
				t.Errorf("FastPath(%q) gave %q for seeds 7, 8 and 9", tt.in, a.Reply)
			}
		})
	}
}

func TestReplyPools(t *testing.T) {
	pools := map[string][]string{
		"greeting": greetingReplies, "timed": timedGreetingTails, "thanks": thanksReplies,
		"praise": praiseReplies, "warm": warmReplies,
	}
	for name, pool := range pools {
		if len(pool) < 4 {
			t.Errorf("%s pool has %d replies, want at least 4 for variety", name, len(pool))
		}
		seen := map[string]bool{}
		for _, r := range pool {
			if r == "" || len(r) > 80 {
				t.Errorf("%s pool reply %q: want short and non-empty", name, r)
			}
			if seen[r] {
				t.Errorf("%s pool has %q twice", name, r)
			}
			seen[r] = true
		}
	}
}

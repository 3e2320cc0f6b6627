package intent

import "testing"

func TestThreadInterrupt(t *testing.T) {
	tests := []struct {
		in   string
		want InterruptAction
	}{
		// Adds to or corrects the current task.
		{"also include Q4", Fold},
		{"Also, include Q4", Fold},
		{"actually make it weekly", Fold},
		{"actually, make it a bar chart", Fold},
		{"and add the EMEA numbers", Fold},
		{"and split it by region", Fold},
		{"btw use the EU region", Fold},
		{"BTW, use the EU region", Fold},
		{"by the way the deadline is Friday", Fold},
		{"oh and send it to Sam too", Fold},
		{"oh, and cc Maria", Fold},
		{"wait, use the staging database", Fold},
		{"instead, email it to the team", Fold},
		{"use the EU region instead", Fold},
		{"use last year's numbers", Fold},
		{"make sure to include the churn rate", Fold},
		{"include Q4 too", Fold},
		{"please include the appendix as well", Fold},
		{"don't forget the footnotes", Fold},
		{"sorry, I meant Q3 not Q2", Fold},
		{"no, the other account", Fold},
		{"only the top 10", Fold},
		{"skip the intro section", Fold},
		{"plus the APAC numbers", Fold},
		{"ps: keep it under a page", Fold},
		{"one more thing: add a summary", Fold},
		{"<@U0LUCY> also include Q4", Fold},
		{"can you also add a chart", Fold},
		{"correction: the client is Globex", Fold},
		// The Add key form's message: the running request may wait for exactly this key.
		{"I added the key for `billing`.", Fold},
		{"I added the key for `github`. now list my repos", Queue},
		{"thanks, can you also make it a PDF?", Fold},
		// New requests: queued.
		{"what's the weather in Paris?", Queue},
		{"can you book a meeting with Sam tomorrow", Queue},
		{"pull the Q3 revenue numbers", Queue},
		{"write a haiku about Mondays", Queue},
		{"who is the CEO of Acme?", Queue},
		{"remind me to call mom at 5", Queue},
		{"thanks", Queue},
		{"ok", Queue},
		{"also", Queue},
		{"and", Queue},
		{"too", Queue},
		{"", Queue},
		{"<@U0LUCY>", Queue},
		{"research competitors for the new product line", Queue},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := ThreadInterrupt(tt.in); got != tt.want {
				t.Errorf("ThreadInterrupt(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestInterruptActionString(t *testing.T) {
	if Queue.String() != "queue" || Fold.String() != "fold" {
		t.Errorf("String() = %q, %q; want queue, fold", Queue.String(), Fold.String())
	}
}

package intent

import "testing"

func TestApprovalAnswer(t *testing.T) {
	tests := []struct {
		in   string
		want Answer
	}{
		// Yes.
		{"yes", Yes},
		{"Yes.", Yes},
		{"YES!!", Yes},
		{"yesss", Yes},
		{"yeah", Yes},
		{"yep", Yes},
		{"y", Yes},
		{"ok", Yes},
		{"okay", Yes},
		{"k", Yes},
		{"sure", Yes},
		{"yes do it", Yes},
		{"yes, do it", Yes},
		{"yes, create it", Yes},
		{"Yes create it please", Yes},
		{"yes please", Yes},
		{"go ahead", Yes},
		{"Go ahead!", Yes},
		{"go for it", Yes},
		{"approve", Yes},
		{"approved", Yes},
		{"Approved ✅", Yes},
		{"confirm", Yes},
		{"confirmed", Yes},
		{"ship it", Yes},
		{"ship it :rocket:", Yes},
		{"do it", Yes},
		{"just do it", Yes},
		{"sounds good, go", Yes},
		{"sounds good, go ahead", Yes},
		{"lgtm", Yes},
		{"LGTM 👍", Yes},
		{"perfect, go ahead", Yes},
		{"great, send it", Yes},
		{"thanks, yes", Yes},
		{"👍", Yes},
		{"👍🏻", Yes},
		{":+1:", Yes},
		{":thumbsup:", Yes},
		{":+1::skin-tone-2:", Yes},
		{"+1", Yes},
		{":white_check_mark:", Yes},
		{"✅", Yes},
		{"<@U0LUCY> yes go ahead", Yes},
		{"yes, delete it", Yes},
		{"no problem, go ahead", Yes},
		{"post it", Yes},
		// No.
		{"no", No},
		{"No.", No},
		{"nope", No},
		{"nah", No},
		{"no thanks", No},
		{"don't", No},
		{"don’t", No},
		{"don't do it", No},
		{"don't send it", No},
		{"deny", No},
		{"denied", No},
		{"reject", No},
		{"cancel it", No},
		{"cancel", No},
		{"stop", No},
		{"hold off", No},
		{"hold off on that please", No},
		{"not yet", No},
		{"not now, thanks", No},
		{"nevermind", No},
		{":x:", No},
		{"❌", No},
		{":-1:", No},
		{":thumbsdown:", No},
		{"👎", No},
		{"<@U0LUCY> no", No},
		{"no no", No},
		{"i don't think so", No},
		// Unclear.
		{"yes but change the title to X", Unclear},
		{"yes, but change the title to X", Unclear},
		{"yes and also add a due date", Unclear},
		{"no, change the title first", Unclear},
		{"yes?", Unclear},
		{"go ahead?", Unclear},
		{"should I?", Unclear},
		{"yeah no", Unclear},
		{"ok, cancel it", Unclear},
		{"maybe", Unclear},
		{"I guess", Unclear},
		{"great", Unclear},
		{"thanks", Unclear},
		{"wait", Unclear},
		{"hold on", Unclear},
		{"delete it", Unclear},
		{"no, delete it", Unclear},
		{"yesterday", Unclear},
		{"yes 🤔", Unclear},
		{"what does it do", Unclear},
		{"create a task called yes", Unclear},
		{"yes `rm -rf /`", Unclear},
		{"yes <https://example.com>", Unclear},
		{"", Unclear},
		{"yes yes yes yes yes yes yes yes yes yes yes yes yes", Unclear},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := ApprovalAnswer(tt.in); got != tt.want {
				t.Errorf("ApprovalAnswer(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestAnswerString(t *testing.T) {
	for a, want := range map[Answer]string{Unclear: "unclear", Yes: "yes", No: "no"} {
		if got := a.String(); got != want {
			t.Errorf("Answer(%d).String() = %q, want %q", a, got, want)
		}
	}
}

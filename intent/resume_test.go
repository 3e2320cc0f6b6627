package intent

import "testing"

func TestResumeAnswer(t *testing.T) {
	for text, want := range map[string]string{
		"retry": ResumeRetry, "Retry!": ResumeRetry, "<@ULUCY> please try again": ResumeRetry, "resume, thanks": ResumeRetry,
		"skip it": ResumeSkip, "Skip that step please": ResumeSkip, "abort": ResumeAbort, "ok give up": "",
		"retry?": "", "can you retry the export with the new key": "", "skip the intro in the report": "",
		"`retry`": "", "": "", "thanks": "",
	} {
		if got := ResumeAnswer(text); got != want {
			t.Errorf("ResumeAnswer(%q) = %q, want %q", text, got, want)
		}
	}
}

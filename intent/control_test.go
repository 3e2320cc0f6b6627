package intent

import "testing"

func TestCancel(t *testing.T) {
	tests := []struct {
		in         string
		cancel     bool
		dropQueued bool
	}{
		// Cancels.
		{"cancel", true, false},
		{"cancel that", true, false},
		{"Cancel that.", true, false},
		{"CANCEL THAT!!!", true, false},
		{"stop", true, false},
		{"Stop!", true, false},
		{"stop it", true, false},
		{"STOP STOP STOP", true, false},
		{"nevermind", true, false},
		{"never mind", true, false},
		{"Never-mind", true, false},
		{"nvm", true, false},
		{"abort", true, false},
		{"forget it", true, false},
		{"don't do that", true, false},
		{"don’t do that", true, false},
		{"dont do that", true, false},
		{"scratch that", true, false},
		{"hold on, stop", true, false},
		{"wait wait stop", true, false},
		{"no no no, stop", true, false},
		{"please stop", true, false},
		{"pls stop", true, false},
		{"stop please", true, false},
		{"stop right now", true, false},
		{"stop what you're doing", true, false},
		{"ok nevermind", true, false},
		{"oops, cancel that", true, false},
		{"actually, never mind", true, false},
		{"nvm, I figured it out", true, false},
		{"never mind, I found it", true, false},
		{"nevermind, thanks anyway", true, false},
		{"scratch that, wrong thread", true, false},
		{"cancel that request", true, false},
		{"ignore my last message", true, false},
		{"stop 🛑", true, false},
		{"🛑", true, false},
		{":octagonal_sign:", true, false},
		{"<@U0LUCY> cancel that", true, false},
		{"<@U0LUCY>: stop", true, false},
		{"lucy stop", true, false},
		{"stop lucy", true, false},
		{"cancle that", true, false},
		// Drop the queue too.
		{"cancel everything", true, true},
		{"cancel all", true, true},
		{"Cancel all of it!", true, true},
		{"stop everything", true, true},
		{"stop all", true, true},
		{"drop the queue", true, true},
		{"clear the queue", true, true},
		{"<@U0LUCY> please cancel everything", true, true},
		{"hold on, stop everything", true, true},
		// Requests that contain cancel words.
		{"stop the EC2 instances in us-east-1", false, false},
		{"can you stop the deploy job", false, false},
		{"can you stop the deploy job?", false, false},
		{"cancel my 3pm meeting", false, false},
		{"cancel the subscription for acme", false, false},
		{"stop sending me these alerts", false, false},
		{"stop the cron that posts every minute", false, false},
		{"how do I cancel my Zoom subscription?", false, false},
		{"what are stop words in NLP", false, false},
		{"the bus stop is closed", false, false},
		{"abort the merge in the repo", false, false},
		{"forget it, just post the numbers", false, false},
		{"never mind the title, use the old one", false, false},
		{"cancel everything on my calendar tomorrow", false, false},
		{"stop everything in us-east-1", false, false},
		{"kill the process on port 8080", false, false},
		{"drop the users table", false, false},
		// Questions, negations and other non-cancels.
		{"cancel?", false, false},
		{"should I stop?", false, false},
		{"don't stop", false, false},
		{"don't cancel", false, false},
		{"no, don't cancel it", false, false},
		{"stop. just kidding", false, false},
		{"wait", false, false},
		{"hold on", false, false},
		{"no", false, false},
		{"I found it", false, false},
		{"ok", false, false},
		{"kill it", false, false},
		{"stop `deploy.sh`", false, false},
		{"stop <https://ci.example.com/job/1|this job>", false, false},
		{"", false, false},
		{"<@U0LUCY>", false, false},
		{"please stop please stop please stop please stop please stop please stop please stop", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			cancel, drop := Cancel(tt.in)
			if cancel != tt.cancel || drop != tt.dropQueued {
				t.Errorf("Cancel(%q) = %v, %v; want %v, %v", tt.in, cancel, drop, tt.cancel, tt.dropQueued)
			}
		})
	}
}

func TestIsStatusQuery(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"what are you working on?", true},
		{"What are you working on", true},
		{"status?", true},
		{"Status", true},
		{"status update?", true},
		{"what's the status", true},
		{"whats the status?", true},
		{"what’s the status on that?", true},
		{"are you still working on it?", true},
		{"still working on it?", true},
		{"how's it going?", true},
		{"hows it going", true},
		{"how's it coming along?", true},
		{"any progress?", true},
		{"progress?", true},
		{"any updates?", true},
		{"any update on this?", true},
		{"what are you doing", true},
		{"what are you doing right now?", true},
		{"where are we with this?", true},
		{"eta?", true},
		{"what's the ETA", true},
		{"how much longer?", true},
		{"are you done yet?", true},
		{"is it done?", true},
		{"you there?", true},
		{"hey lucy, what's the status?", true},
		{"<@U0LUCY> status?", true},
		{"<@U0LUCY> any progress? :eyes:", true},
		{"just checking in, any updates?", true},
		{"so... how's it going??", true},
		{"what’s taking so long?", true},
		// Requests about something else.
		{"what's the status of the Q3 report", false},
		{"what's the status of the Q3 report?", false},
		{"status of the deploy", false},
		{"check the status page", false},
		{"send me a status report", false},
		{"any updates on the Jira ticket?", false},
		{"how's it going with the hiring pipeline?", false},
		{"what are you working on for the client?", false},
		{"update the spreadsheet", false},
		{"progress report for the board", false},
		{"what is the status code for not found", false},
		{"how are you?", false},
		{"hi", false},
		{"still", false},
		{"", false},
		{"status `kubectl get pods`", false},
		{"status <https://status.example.com>", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := IsStatusQuery(tt.in); got != tt.want {
				t.Errorf("IsStatusQuery(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

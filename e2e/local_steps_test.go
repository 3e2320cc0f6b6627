package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/lucy-agent/lucy/internal/fakellm"
)

// The run delivers its answer with a local activity, in the workflow task that received it. A
// signal or a cancel that reaches the run while that task runs makes the server refuse the task's
// completion, and the next task runs the delivery again, with nothing recorded of the first. These
// tests hold the delivery's first Slack write until the lane has sent the run "cancel that" or a
// follow-up message, so that the refusal happens every time, and count what the thread ends with.
func TestDeliveryRunAgainAfterARefusedTask(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		// lane is the lane's history event that says the server took the cancel or the signal.
		lane enumspb.EventType
	}{
		{"cancel that", "<@ULUCY> cancel that", enumspb.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_CANCEL_REQUESTED},
		{"a follow-up", "<@ULUCY> and one more thing", enumspb.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_SIGNALED},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Two messages' worth: the answer's second part is a post of its own, which a
			// delivery that runs again must find rather than post twice.
			var long strings.Builder
			for i := 0; i < 3; i++ {
				fmt.Fprintf(&long, "Gamma part %d. %s\n\n", i, strings.Repeat("Gamma words of the answer. ", 180))
			}
			s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
				if strings.Contains(lastUserText(req), "one more thing") {
					return fakellm.Reply{Content: "Delta, the follow-up's answer."}
				}
				return fakellm.Reply{Content: long.String()}
			})
			var once sync.Once
			held, release := make(chan struct{}), make(chan struct{})
			s.slackBefore(t, func(r *http.Request) {
				if !strings.HasSuffix(r.URL.Path, "/chat.update") {
					return
				}
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				if form, _ := url.ParseQuery(string(body)); strings.Contains(form.Get("text"), "Gamma part 0") {
					once.Do(func() {
						close(held)
						<-release
					})
				}
			})

			root := s.say("<@ULUCY> write the long report", "")
			s.event("app_mention", "Ev-report", "<@ULUCY> write the long report", root, "", human)
			select {
			case <-held:
			case <-time.After(60 * time.Second):
				t.Fatal("the answer's delivery never started")
			}
			runID := s.currentOrLastRun(t, root)
			ts := s.say(tc.text, root)
			s.event("message", "Ev-second", tc.text, ts, root, human)
			laneID := strings.TrimSuffix(runID, runID[strings.Index(runID, ":run:"):])
			s.waitFor("the lane to reach the run", 30*time.Second, func() bool {
				evs, err := s.historyOrErr(laneID)
				if err != nil {
					return false
				}
				for _, ev := range evs {
					if ev.GetEventType() == tc.lane {
						return true
					}
				}
				return false
			})
			close(release)

			var last enumspb.EventType
			s.waitFor("the run to end", 60*time.Second, func() bool {
				evs, err := s.historyOrErr(runID)
				if err != nil || len(evs) == 0 {
					return false
				}
				last = evs[len(evs)-1].GetEventType()
				return evs[len(evs)-1].GetWorkflowExecutionCompletedEventAttributes() != nil ||
					evs[len(evs)-1].GetWorkflowExecutionCanceledEventAttributes() != nil ||
					evs[len(evs)-1].GetWorkflowExecutionFailedEventAttributes() != nil
			})
			refused := false
			for _, ev := range s.history(t, runID) {
				if a := ev.GetWorkflowTaskFailedEventAttributes(); a != nil && a.GetCause() == enumspb.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND {
					refused = true
				}
			}
			if !refused {
				t.Fatal("the server did not refuse the task that delivered: the test did not reach the case it is for")
			}
			if last != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED {
				t.Errorf("the run ended with %s, want completed: its answer was delivered", last)
			}
			if tc.name == "a follow-up" {
				s.waitFor("the follow-up's answer", 60*time.Second, func() bool { return s.answered(root, "Delta") })
			}
			for i := 0; i < 3; i++ {
				want, n := fmt.Sprintf("Gamma part %d.", i), 0
				for _, m := range s.botMessages(root) {
					n += strings.Count(m.Text, want)
				}
				if n != 1 {
					t.Errorf("%q appears %d times in the thread, want once", want, n)
				}
			}
			for _, m := range s.botMessages(root) {
				if strings.Contains(m.Text, "Stopped") || strings.Contains(m.Text, "Thinking") {
					t.Errorf("the thread ends with %q: the delivered answer must stand, and nothing be left thinking", m.Text)
				}
			}
		})
	}
}

package devserver

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/common/dynamicconfig"
)

// floodTask is one task of the flood: whose it is, and the priority its workflow was started with.
type floodTask struct {
	Team     string
	Priority int
}

// floodDone is what the activity saw when it ran: its task, and the priority and fairness key the
// server gave it (inherited from its workflow: the workflow sets none on the activity).
type floodDone struct {
	floodTask
	Got temporal.Priority
	At  time.Duration
}

// flood starts every task's workflow on a fresh task queue while no worker polls it, so that they
// all wait in its backlog, then starts one worker that runs one activity at a time, and returns the
// activities in the order they ran. Each workflow runs one activity, which takes a few milliseconds.
func flood(t *testing.T, c client.Client, queue string, tasks []floodTask) []floodDone {
	t.Helper()
	ctx := context.Background()
	var runs []client.WorkflowRun
	for i, task := range tasks {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: fmt.Sprintf("%s-%d", queue, i), TaskQueue: queue,
			Priority: temporal.Priority{PriorityKey: task.Priority, FairnessKey: task.Team},
		}, "flood", task)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run)
	}
	var (
		mu    sync.Mutex
		done  []floodDone
		start = time.Now()
	)
	w := worker.New(c, queue, worker.Options{
		MaxConcurrentActivityExecutionSize: 1, MaxConcurrentActivityTaskPollers: 2, MaxConcurrentWorkflowTaskPollers: 2,
		DisableEagerActivities: true, // eager dispatch would skip the task queue this measures
	})
	w.RegisterWorkflowWithOptions(func(ctx workflow.Context, task floodTask) error {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second})
		return workflow.ExecuteActivity(ctx, "work", task).Get(ctx, nil)
	}, workflow.RegisterOptions{Name: "flood"})
	w.RegisterActivityWithOptions(func(ctx context.Context, task floodTask) error {
		time.Sleep(5 * time.Millisecond) // a model call's share of a worker slot, shortened
		mu.Lock()
		defer mu.Unlock()
		done = append(done, floodDone{floodTask: task, Got: activity.GetInfo(ctx).Priority, At: time.Since(start)})
		return nil
	}, activity.RegisterOptions{Name: "work"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, run := range runs {
		if err := run.Get(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(done)
}

// lastOf is the 1-based place in done of the last task of team with priority (0: any).
func lastOf(done []floodDone, team string, priority int) (place int, at time.Duration) {
	for i, d := range done {
		if d.Team == team && (priority == 0 || d.Priority == priority) {
			place, at = i+1, d.At
		}
	}
	return place, at
}

func repeat(n int, task floodTask) []floodTask {
	out := make([]floodTask, n)
	for i := range out {
		out[i] = task
	}
	return out
}

// TestFairnessAcrossTeams: on lucy dev's server (DynamicConfig: matching.enableFairness), a team
// whose 50 tasks wait in the task queue before a second team's 5 does not hold those 5 behind its
// 50: the matching service dispatches by fairness key (Lucy's: the workspace) in proportion to the
// keys' weights (service/matching/fairness.md). With the server's default (fairness off) the same
// five wait for the whole flood. Within one team, a lower priority key goes first. The activities
// inherit their workflow's priority and fairness key (no activity option sets them).
func TestFairnessAcrossTeams(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two Temporal servers")
	}
	// A's flood, then B's few, all at the same priority: only fairness can bring B forward.
	tasks := append(repeat(50, floodTask{Team: "A", Priority: 3}), repeat(5, floodTask{Team: "B", Priority: 3})...)
	places := map[bool]int{}
	for _, fair := range []bool{true, false} {
		o := Options{DataDir: t.TempDir(), Logger: testLogger(t)}
		if !fair {
			o.DynamicConfig = dynamicconfig.StaticClient{dynamicconfig.MatchingEnableFairness.Key(): false}
		}
		c := dial(t, startServer(t, o), defaultNamespace)
		done := flood(t, c, "flood", tasks)
		if len(done) != len(tasks) {
			t.Fatalf("fairness %v: %d activities ran, want %d", fair, len(done), len(tasks))
		}
		for _, d := range done {
			if d.Got.FairnessKey != d.Team || d.Got.PriorityKey != d.Priority {
				t.Fatalf("fairness %v: an activity of team %s ran with %+v: not its workflow's", fair, d.Team, d.Got)
			}
		}
		placeB, atB := lastOf(done, "B", 0)
		placeA, atA := lastOf(done, "A", 0)
		places[fair] = placeB
		t.Logf("fairness %v: team B's 5 done by place %d of 55 (%v); team A's 50 by place %d (%v)",
			fair, placeB, atB.Round(time.Millisecond), placeA, atA.Round(time.Millisecond))
		if !fair {
			continue
		}
		// With equal weights the two keys alternate (A B A B …): B's five are done by place 10
		// (measured: 10, and 55 of 55 with fairness off). The bound leaves two places of slack.
		if placeB > 12 {
			t.Errorf("with fairness on, team B's 5 were done only at place %d of 55, behind most of A's flood", placeB)
		}

		// Priority within a team: 30 scheduled jobs waiting, then 5 people's messages.
		prio := append(repeat(30, floodTask{Team: "A", Priority: 3}), repeat(5, floodTask{Team: "A", Priority: 1})...)
		done = flood(t, c, "priority", prio)
		placeP, atP := lastOf(done, "A", 1)
		t.Logf("priority: the 5 interactive tasks done by place %d of 35 (%v)", placeP, atP.Round(time.Millisecond))
		if placeP > 7 { // measured: 5 of 35
			t.Errorf("the 5 interactive tasks were done only at place %d of 35, behind the scheduled ones", placeP)
		}
	}
	if places[true] >= places[false] {
		t.Errorf("team B's last task at place %d with fairness, %d without: fairness brought it no sooner", places[true], places[false])
	}
}

// BenchmarkFairnessFlood is the measurement on lucy dev's server, at the task queue: one
// worker with 4 activity slots, each request one workflow whose activity takes 20 ms (a model
// call, shortened). Team B's 5 requests alone give their usual latency (from the start call to
// the activity's end); then team A sends 200 at once and B its 5 right after, with fairness on
// (lucy dev's configuration) and off (the server's default). It reports B's p99 (the slowest of
// five) in each case.
func BenchmarkFairnessFlood(b *testing.B) {
	for i := 0; i < b.N; i++ {
		for _, fair := range []bool{true, false} {
			o := Options{DataDir: b.TempDir(), Logger: testLogger(b)}
			if !fair {
				o.DynamicConfig = dynamicconfig.StaticClient{dynamicconfig.MatchingEnableFairness.Key(): false}
			}
			c := dial(b, startServer(b, o), defaultNamespace)
			var mu sync.Mutex
			doneAt := map[string]time.Time{}
			w := worker.New(c, "requests", worker.Options{MaxConcurrentActivityExecutionSize: 4, DisableEagerActivities: true})
			w.RegisterWorkflowWithOptions(func(ctx workflow.Context, id string) error {
				ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
				return workflow.ExecuteActivity(ctx, "answer", id).Get(ctx, nil)
			}, workflow.RegisterOptions{Name: "request"})
			w.RegisterActivityWithOptions(func(ctx context.Context, id string) error {
				time.Sleep(20 * time.Millisecond)
				mu.Lock()
				doneAt[id] = time.Now()
				mu.Unlock()
				return nil
			}, activity.RegisterOptions{Name: "answer"})
			if err := w.Start(); err != nil {
				b.Fatal(err)
			}
			send := func(team string, n int, prefix string) (started map[string]time.Time, runs []client.WorkflowRun) {
				started = map[string]time.Time{}
				var smu sync.Mutex
				var wg sync.WaitGroup
				for k := 0; k < n; k++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						id := fmt.Sprintf("%s-%s-%d", prefix, team, k)
						at := time.Now()
						run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: "requests",
							Priority: temporal.Priority{PriorityKey: 1, FairnessKey: team}}, "request", id)
						if err != nil {
							b.Error(err)
							return
						}
						smu.Lock()
						started[id], runs = at, append(runs, run)
						smu.Unlock()
					}()
				}
				wg.Wait()
				return started, runs
			}
			wait := func(runs []client.WorkflowRun) {
				for _, r := range runs {
					if err := r.Get(context.Background(), nil); err != nil {
						b.Fatal(err)
					}
				}
			}
			slowest := func(started map[string]time.Time) time.Duration {
				mu.Lock()
				defer mu.Unlock()
				var worst time.Duration
				for id, at := range started {
					worst = max(worst, doneAt[id].Sub(at))
				}
				return worst
			}
			alone, runs := send("B", 5, "alone")
			wait(runs)
			usual := slowest(alone)
			_, flood := send("A", 200, "flood")
			during, runs := send("B", 5, "during")
			wait(runs)
			wait(flood)
			p99 := slowest(during)
			w.Stop()
			b.Logf("fairness %v: team B's 5 requests, p99 %v alone, %v right after team A's 200 (4 worker slots, 20 ms of work each)",
				fair, usual.Round(time.Millisecond), p99.Round(time.Millisecond))
			name := "ms-p99-flood-fair"
			if !fair {
				name = "ms-p99-flood-unfair"
			}
			b.ReportMetric(float64(p99)/float64(time.Millisecond), name)
			if fair {
				b.ReportMetric(float64(usual)/float64(time.Millisecond), "ms-p99-alone")
			}
		}
	}
}

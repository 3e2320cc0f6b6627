package activities

import (
	"context"
	"sync"

	"go.temporal.io/sdk/activity"
)

// OpenRunInput opens an agent run in its thread: the placeholder to post and the thread to read.
type OpenRunInput struct {
	Placeholder PostInput       `json:"placeholder"`
	Thread      LoadThreadInput `json:"thread"`
}

// OpenRunResult is the placeholder posted and the thread read. A transcript refers to the thread's
// messages as it does to LoadThread's (Entry.Ref the activity's ID, Index the message).
type OpenRunResult struct {
	Placeholder PostResult    `json:"placeholder"`
	Thread      ThreadHistory `json:"thread"`
	// ThreadError is why the thread could not be read (Thread is then empty): the run reads it
	// with LoadThread, whose failure it reports in the placeholder this result names.
	ThreadError string `json:"threadError,omitempty"`
}

// OpenRun posts the run's placeholder and reads its thread at the same time, in one activity (a lean
// start): the two used to be two activities, and the one that finished first woke the workflow for
// nothing, a workflow task and a dispatch per conversation. Both halves are what PostPlaceholder and
// LoadThread do, so a retried attempt finds the placeholder it posted. Only the placeholder can fail
// it: a thread that cannot be read is reported in the result (ThreadError), so that the run knows its
// placeholder whatever happens next.
//
// As a local activity (the run's first workflow task) it may be running again after that task was
// retried, with nothing recorded of the first time: it reads the thread first, past the run's
// message, and takes the placeholder an earlier execution posted rather than post a second one. The
// placeholder then follows the read instead of going beside it: the same one conversations.replies
// call, where asking before posting would have been a second.
func (a *Activities) OpenRun(ctx context.Context, in OpenRunInput) (OpenRunResult, error) {
	if activity.IsActivity(ctx) && activity.GetInfo(ctx).IsLocalActivity {
		return a.openRunOnce(ctx, in)
	}
	var out OpenRunResult
	var loadErr error
	var wg sync.WaitGroup
	wg.Go(func() { out.Thread, loadErr = a.LoadThread(ctx, in.Thread) })
	ph, postErr := a.PostPlaceholder(ctx, in.Placeholder)
	wg.Wait()
	if postErr != nil {
		return OpenRunResult{}, postErr
	}
	out.Placeholder = ph
	if loadErr != nil {
		if ctx.Err() != nil {
			return OpenRunResult{}, ctx.Err()
		}
		a.Log.Warn().Err(loadErr).Str("channel", in.Thread.Channel).Str("thread", in.Thread.ThreadTS).
			Msg("the thread could not be read with the placeholder; the run reads it again")
		out.Thread, out.ThreadError = ThreadHistory{}, loadErr.Error()
	}
	return out, nil
}

// openRunOnce is OpenRun as a local activity: read, then post unless an earlier execution did.
func (a *Activities) openRunOnce(ctx context.Context, in OpenRunInput) (OpenRunResult, error) {
	var out OpenRunResult
	th, own, err := a.loadThread(ctx, in.Thread, in.Placeholder.RunID)
	if err != nil {
		if ctx.Err() != nil {
			return OpenRunResult{}, ctx.Err()
		}
		a.Log.Warn().Err(err).Str("channel", in.Thread.Channel).Str("thread", in.Thread.ThreadTS).
			Msg("the thread could not be read before the placeholder; the run reads it again")
		out.ThreadError = err.Error()
		// PostPlaceholder looks for an earlier post itself, and fails if it cannot tell.
		out.Placeholder, err = a.PostPlaceholder(ctx, in.Placeholder)
		return out, err
	}
	out.Thread = th
	out.Placeholder, err = a.placeholderAfter(ctx, in.Placeholder, own)
	if err != nil {
		return OpenRunResult{}, err
	}
	return out, nil
}

package activities

import (
	"context"
	"sync"
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
func (a *Activities) OpenRun(ctx context.Context, in OpenRunInput) (OpenRunResult, error) {
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

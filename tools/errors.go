package tools

import (
	"errors"
	"fmt"
	"time"
)

// ArgError reports arguments that no retry can fix: invalid JSON, a missing or mistyped field, a value
// out of range, a path that escapes the workspace, a URL Lucy may not fetch. Msg is written for the
// model, so that it can correct the call itself. The activity turns it into a non-retryable error.
type ArgError struct {
	Tool string // the tool that was called
	Msg  string // what is wrong and how to call the tool correctly
}

func (e *ArgError) Error() string {
	return fmt.Sprintf("invalid arguments for %s: %s", e.Tool, e.Msg)
}

// ArgErrorf builds an *ArgError for tool. Its message often quotes the arguments, and it is stored in
// workflow history and logged: credentials in it are masked.
func ArgErrorf(tool, format string, args ...any) *ArgError {
	return &ArgError{Tool: tool, Msg: RedactCredentials(fmt.Sprintf(format, args...))}
}

// TransientError wraps a failure that may go away on its own: a network timeout, a refused connection,
// HTTP 408/429/5xx, a Slack rate limit. The activity lets Temporal retry it when the tool is idempotent
// (0.5 s -> 2 s -> 8 s, three attempts); a side-effecting tool is attempted once whatever the error,
// because the first attempt may have taken effect.
type TransientError struct {
	Tool string
	Err  error
	// RetryAfter is the server's requested delay (Slack's Retry-After), zero when it gave none.
	RetryAfter time.Duration
}

func (e *TransientError) Error() string {
	return fmt.Sprintf("%s: temporary failure: %v", e.Tool, e.Err)
}

func (e *TransientError) Unwrap() error { return e.Err }

// Retryable reports true: the failure is worth another attempt (the same method slack-go uses).
func (e *TransientError) Retryable() bool { return true }

// ErrBuiltin is returned (wrapped) by Runner.Run for a tool that the workflow executes itself
// (Spec.Builtin): reaching Run with one is a programming error, and retrying will not help.
var ErrBuiltin = errors.New("builtin tool is executed by the workflow, not by the Runner")

// ToolError is an Output that tells the model what went wrong, with a nil Go error: the call was
// valid and done, and its answer is a failure the model should see and work around.
// Like an *ArgError's, its message may quote arguments or URLs: credentials in it are masked.
func ToolError(format string, args ...any) Output {
	return Output{Content: "Error: " + RedactCredentials(fmt.Sprintf(format, args...)), IsError: true}
}

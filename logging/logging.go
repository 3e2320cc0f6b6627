// Package logging builds Lucy's one zerolog logger and bridges the Temporal SDK's logger to it.
//
// Outside workflow code everything logs through zerolog (JSON in production, console in dev). Inside
// workflows only workflow.GetLogger(ctx) is replay-safe; the SDK hands it our adapter, so workflow
// logs end up in the same stream with the same key style.
package logging

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
)

// New returns the process logger. level is debug|info|warn|error, format json|console.
func New(w io.Writer, level, format string) zerolog.Logger {
	if w == nil {
		w = os.Stderr
	}
	if format == "console" {
		// Colours only on a terminal: a log file full of escape codes is unreadable.
		f, isFile := w.(*os.File)
		color := isFile && isatty.IsTerminal(f.Fd())
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly, NoColor: !color}
	}
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		lvl = zerolog.InfoLevel
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger()
}

// Temporal adapts a zerolog.Logger to the Temporal SDK's log.Logger (and log.WithLogger), which has no
// zerolog adapter of its own.
type Temporal struct {
	L zerolog.Logger
	// warnTypes are application error types logged at warn where the SDK says error (WarnOn).
	warnTypes []string
}

var (
	_ sdklog.Logger     = Temporal{}
	_ sdklog.WithLogger = Temporal{}
)

// NewTemporal returns the adapter.
func NewTemporal(l zerolog.Logger) Temporal { return Temporal{L: l} }

// WarnOn returns t logging at warn, instead of error, the SDK's lines about an error that is a
// *temporal.ApplicationError of one of types.
//
// The SDK's activity worker logs every failed attempt as "Activity error." at error level, except
// the "benign" category, which it drops to debug. Neither fits a mistake the model made in a
// tool call (bad arguments, a refused URL, a path outside the workspace): the workflow hands it
// back to the model, nothing is broken, yet an operator should still see it. At warn it stays
// visible at the default level without paging anyone; real faults stay at error.
func (t Temporal) WarnOn(types ...string) Temporal {
	t.warnTypes = append(slices.Clone(t.warnTypes), types...)
	return t
}

func (t Temporal) Debug(msg string, keyvals ...any) { fields(t.L.Debug(), keyvals).Msg(msg) }
func (t Temporal) Info(msg string, keyvals ...any)  { fields(t.L.Info(), keyvals).Msg(msg) }
func (t Temporal) Warn(msg string, keyvals ...any)  { fields(t.L.Warn(), keyvals).Msg(msg) }
func (t Temporal) Error(msg string, keyvals ...any) {
	if cancelled(keyvals) {
		// A person said "cancel that", or the worker is stopping: the SDK's activity worker logs the
		// attempt that returned context.Canceled as "Activity error." (internal_task_handlers.go), but
		// nothing failed. Logged as what it is, at info; a real error stays at error.
		if msg == "Activity error." {
			msg = "Activity cancelled."
		}
		fields(t.L.Info(), keyvals).Bool("cancelled", true).Msg(msg)
		return
	}
	if t.demoted(keyvals) {
		fields(t.L.Warn(), keyvals).Msg(msg)
		return
	}
	fields(t.L.Error(), keyvals).Msg(msg)
}

// cancelled reports whether keyvals hold an error that is a cancellation: context.Canceled or
// Temporal's *temporal.CanceledError, however wrapped. A deadline is not one: a timeout stays an error.
func cancelled(keyvals []any) bool {
	for i := 1; i < len(keyvals); i += 2 {
		err, ok := keyvals[i].(error)
		if !ok {
			continue
		}
		var ce *temporal.CanceledError
		if errors.Is(err, context.Canceled) || errors.As(err, &ce) {
			return true
		}
	}
	return false
}

// demoted reports whether keyvals hold an application error of one of warnTypes.
func (t Temporal) demoted(keyvals []any) bool {
	if len(t.warnTypes) == 0 {
		return false
	}
	for i := 1; i < len(keyvals); i += 2 {
		err, ok := keyvals[i].(error)
		if !ok {
			continue
		}
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && slices.Contains(t.warnTypes, appErr.Type()) {
			return true
		}
	}
	return false
}

// With returns a logger that adds keyvals to every line.
func (t Temporal) With(keyvals ...any) sdklog.Logger {
	ctx := t.L.With()
	for i := 0; i < len(keyvals); i += 2 {
		ctx = ctx.Interface(key(keyvals, i), val(keyvals, i))
	}
	return Temporal{L: ctx.Logger(), warnTypes: t.warnTypes}
}

func fields(e *zerolog.Event, keyvals []any) *zerolog.Event {
	for i := 0; i < len(keyvals); i += 2 {
		v := val(keyvals, i)
		if err, ok := v.(error); ok {
			e = e.AnErr(key(keyvals, i), err)
			continue
		}
		e = e.Interface(key(keyvals, i), v)
	}
	return e
}

// key lowers the SDK's PascalCase keys (WorkflowID, RunID, ActivityType) to our lowerCamel style.
func key(keyvals []any, i int) string {
	k, ok := keyvals[i].(string)
	if !ok {
		k = fmt.Sprint(keyvals[i])
	}
	if k == "" {
		return "key"
	}
	b := []byte(k)
	// Lower the leading run of capitals except the last one of an acronym followed by lowercase:
	// "WorkflowID" -> "workflowID", "RunID" -> "runID", "ID" -> "id".
	n := 0
	for n < len(b) && b[n] >= 'A' && b[n] <= 'Z' {
		n++
	}
	if n > 1 && n < len(b) {
		n--
	}
	for j := 0; j < n; j++ {
		b[j] += 'a' - 'A'
	}
	return string(b)
}

func val(keyvals []any, i int) any {
	if i+1 < len(keyvals) {
		return keyvals[i+1]
	}
	return "(missing)"
}

package devserver

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// serverLogger adapts zerolog to the Temporal server's log.Logger interface.
//
// The Temporal server logs a lot at info level (every service start, shard
// movement, namespace refresh...), so only warn and above reach the zerolog
// logger (which may filter further with its own level).
//
// Severity mapping: DPanic logs at error level and carries on (zap's production
// behaviour). Panic logs at error level and then panics (zap's behaviour: the
// server relies on not returning from it). Fatal logs at error level and then
// panics with a *fatalError instead of calling os.Exit: Start recovers that panic
// while the server is being built and started, so a fatal start-up condition
// (for example a listener that cannot bind) becomes an error returned to the
// caller instead of killing the process.
//
// Two kinds of noise are dropped: warnings listed in benignWarnings, and, once
// Stop has begun, everything below error level (the server's internal workers
// keep polling, and warning, while the frontend goes away; some of them are
// never stopped by the server at all).
//
// With keeps its tags and formats them only when a message is written: the server derives a logger
// for nearly every request, task and transaction, and writes with almost none of them (warn and
// above only). Formatting at each With was 1.3 % of what lucy dev allocated in
// BenchmarkConversationsPerSecond.
type serverLogger struct {
	zl       zerolog.Logger
	minLevel *atomic.Int32 // shared by all loggers derived with With
	with     []tag.Tag     // With's tags, oldest first; never appended to in place (see With)
}

// benignWarnings are message prefixes logged at warn level on every start of
// this configuration that need no action.
var benignWarnings = []string{
	// We run no frontend HTTP API: Lucy uses no Nexus endpoints.
	"HTTP API port has not been set",
}

var (
	_ log.Logger     = serverLogger{}
	_ log.WithLogger = serverLogger{}
)

// newServerLogger returns a Temporal server logger writing through zl.
func newServerLogger(zl zerolog.Logger) serverLogger {
	minLevel := &atomic.Int32{}
	minLevel.Store(int32(zerolog.WarnLevel))
	// Not "component": the server's own tags use that key.
	return serverLogger{zl: zl.With().Str("logger", "temporal").Logger(), minLevel: minLevel}
}

// quiet drops everything below error level from now on.
func (l serverLogger) quiet() { l.minLevel.Store(int32(zerolog.ErrorLevel)) }

// fatalError is the panic value of serverLogger.Fatal.
type fatalError struct{ msg string }

func (e *fatalError) Error() string { return e.msg }

func (l serverLogger) Debug(msg string, tags ...tag.Tag) { l.log(zerolog.DebugLevel, msg, tags) }
func (l serverLogger) Info(msg string, tags ...tag.Tag)  { l.log(zerolog.InfoLevel, msg, tags) }
func (l serverLogger) Warn(msg string, tags ...tag.Tag)  { l.log(zerolog.WarnLevel, msg, tags) }
func (l serverLogger) Error(msg string, tags ...tag.Tag) { l.log(zerolog.ErrorLevel, msg, tags) }

func (l serverLogger) DPanic(msg string, tags ...tag.Tag) { l.log(zerolog.ErrorLevel, msg, tags) }

func (l serverLogger) Panic(msg string, tags ...tag.Tag) {
	l.log(zerolog.ErrorLevel, msg, tags)
	panic("temporal server: " + msg + tagSummary(tags))
}

func (l serverLogger) Fatal(msg string, tags ...tag.Tag) {
	l.log(zerolog.ErrorLevel, msg, tags)
	panic(&fatalError{msg: msg + tagSummary(tags)})
}

// With returns a logger that adds tags to every line (log.WithLogger).
func (l serverLogger) With(tags ...tag.Tag) log.Logger {
	// Clip: two loggers derived from l must not append into one backing array.
	return serverLogger{zl: l.zl, minLevel: l.minLevel, with: append(slices.Clip(l.with), tags...)}
}

func (l serverLogger) log(level zerolog.Level, msg string, tags []tag.Tag) {
	if int32(level) < l.minLevel.Load() {
		return
	}
	if level == zerolog.WarnLevel {
		for _, p := range benignWarnings {
			if strings.HasPrefix(msg, p) {
				return
			}
		}
	}
	ev := l.zl.WithLevel(level)
	if ev == nil { // disabled by the zerolog logger's own level
		return
	}
	for _, t := range l.with {
		addField(ev, t.Key(), tagValue(t))
	}
	for _, t := range tags {
		addField(ev, t.Key(), tagValue(t))
	}
	ev.Msg(msg)
}

// tagValue returns a tag's value; the server's tags are zap fields whose
// Value() can panic on exotic field types, so be defensive.
func tagValue(t tag.Tag) (v any) {
	defer func() {
		if r := recover(); r != nil {
			v = fmt.Sprintf("<unprintable: %v>", r)
		}
	}()
	return t.Value()
}

func addField(ev *zerolog.Event, key string, v any) {
	switch v := v.(type) {
	case nil:
		ev.Interface(key, nil)
	case string:
		ev.Str(key, v)
	case []string:
		ev.Strs(key, v)
	case bool:
		ev.Bool(key, v)
	case int:
		ev.Int(key, v)
	case int32:
		ev.Int32(key, v)
	case int64:
		ev.Int64(key, v)
	case uint32:
		ev.Uint32(key, v)
	case uint64:
		ev.Uint64(key, v)
	case float64:
		ev.Float64(key, v)
	case time.Duration:
		ev.Str(key, v.String())
	case time.Time:
		ev.Time(key, v)
	case error:
		ev.Str(key, v.Error())
	case fmt.Stringer:
		ev.Str(key, v.String())
	default:
		ev.Interface(key, v)
	}
}

// tagSummary renders tags as " (k=v, k=v)" for panic messages.
func tagSummary(tags []tag.Tag) string {
	if len(tags) == 0 {
		return ""
	}
	parts := make([]string, 0, len(tags))
	for _, t := range tags {
		parts = append(parts, fmt.Sprintf("%s=%v", t.Key(), tagValue(t)))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

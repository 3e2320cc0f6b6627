// Package clock holds lucy_current_time. It is its own package, the smallest domain, because the
// only thing it needs is a clock: tests give it a fixed one.
package clock

import (
	"context"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // time zones must resolve in minimal container images without /usr/share/zoneinfo

	"github.com/lucy-agent/lucy/tools"
)

// Clock tells the time.
type Clock struct {
	now func() time.Time
}

// New returns the clock domain reading now (nil: time.Now).
func New(now func() time.Time) *Clock {
	if now == nil {
		now = time.Now
	}
	return &Clock{now: now}
}

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: tools.CurrentTime,
		Description: "Get the current date and time, in UTC and optionally in an IANA time zone " +
			"(e.g. America/New_York, Europe/Paris, Asia/Kolkata).",
		Idempotent: true,
		Quick:      true,
		Human:      "checking the time",
	},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("timezone", "IANA time zone name, e.g. Europe/Berlin. Defaults to UTC.", 0, 64),
		}
	},
}, (*Clock).currentTime)

type currentTimeArgs struct {
	Timezone string `json:"timezone"`
}

// currentTime reads the real clock: this is activity code, and its result is recorded in history.
func (c *Clock) currentTime(_ context.Context, inv tools.Invocation) (tools.Output, error) {
	var args currentTimeArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	now := c.now().UTC()
	name := strings.TrimSpace(args.Timezone)
	loc := time.UTC
	if name != "" && !strings.EqualFold(name, "UTC") {
		l, err := time.LoadLocation(name)
		if err != nil || strings.EqualFold(name, "local") {
			return tools.Output{}, tools.ArgErrorf(tools.CurrentTime, "%q is not an IANA time zone name; use one like \"America/New_York\", "+
				"\"Europe/London\" or \"Asia/Tokyo\", or omit it for UTC", name)
		}
		loc = l
	}
	local := now.In(loc)
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %s", local.Format("Monday, 2 January 2006, 15:04:05"), zoneLabel(local, loc))
	if loc != time.UTC {
		fmt.Fprintf(&b, "\nUTC: %s", now.Format(time.RFC3339))
	}
	fmt.Fprintf(&b, "\nISO 8601: %s\nUnix time: %d", local.Format(time.RFC3339), now.Unix())
	return tools.Output{Content: b.String()}, nil
}

func zoneLabel(t time.Time, loc *time.Location) string {
	abbr, offset := t.Zone()
	sign := "+"
	if offset < 0 {
		sign, offset = "-", -offset
	}
	utcOffset := fmt.Sprintf("UTC%s%02d:%02d", sign, offset/3600, offset%3600/60)
	if loc == time.UTC {
		return "UTC"
	}
	return fmt.Sprintf("%s (%s, %s)", loc.String(), abbr, utcOffset)
}

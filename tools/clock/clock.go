package tools

import (
	"context"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // time zones must resolve in minimal container images without /usr/share/zoneinfo
)

// clockTools tell the time.
var clockTools = []entry{
	{
		spec: Spec{
			Name: CurrentTime,
			Description: "Get the current date and time, in UTC and optionally in an IANA time zone " +
				"(e.g. America/New_York, Europe/Paris, Asia/Kolkata).",
			Idempotent: true,
			Human:      "checking the time",
		},
		props: func() []prop {
			return []prop{
				strProp("timezone", "IANA time zone name, e.g. Europe/Berlin. Defaults to UTC.", 0, 64),
			}
		},
		run: (*Registry).currentTime,
	},
}

type currentTimeArgs struct {
	Timezone string `json:"timezone"`
}

// currentTime reads the real clock: this is activity code, and its result is recorded in history.
func (r *Registry) currentTime(_ context.Context, inv Invocation) (Output, error) {
	var args currentTimeArgs
	if err := DecodeArgs(inv, &args); err != nil {
		return Output{}, err
	}
	now := r.now().UTC()
	name := strings.TrimSpace(args.Timezone)
	loc := time.UTC
	if name != "" && !strings.EqualFold(name, "UTC") {
		l, err := time.LoadLocation(name)
		if err != nil || strings.EqualFold(name, "local") {
			return Output{}, argErrorf(CurrentTime, "%q is not an IANA time zone name; use one like \"America/New_York\", "+
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
	return Output{Content: b.String()}, nil
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

package clock

import (
	"strings"
	"testing"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/tooltest"
)

func TestCurrentTime(t *testing.T) {
	r := tooltest.Runner(t, New(tooltest.Now)) // 2026-05-01 18:03:22 UTC
	tests := []struct {
		args string
		want []string
	}{
		{`{}`, []string{"Friday, 1 May 2026, 18:03:22, UTC", "ISO 8601: 2026-05-01T18:03:22Z", "Unix time: 1777658602"}},
		{`{"timezone": "utc"}`, []string{"18:03:22, UTC"}},
		{`{"timezone": "America/New_York"}`, []string{"Friday, 1 May 2026, 14:03:22, America/New_York (EDT, UTC-04:00)",
			"UTC: 2026-05-01T18:03:22Z", "ISO 8601: 2026-05-01T14:03:22-04:00"}},
		{`{"timezone": "Asia/Kolkata"}`, []string{"Friday, 1 May 2026, 23:33:22, Asia/Kolkata (IST, UTC+05:30)"}},
		{`{"timezone": "Pacific/Kiritimati"}`, []string{"Saturday, 2 May 2026, 08:03:22"}},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			tooltest.WantOK(t, tooltest.MustRun(t, r, tools.CurrentTime, tt.args), tt.want...)
		})
	}
}

// The mistakes a model makes come back as an *tools.ArgError naming the problem.
func TestCurrentTimeArgValidation(t *testing.T) {
	r := tooltest.Runner(t, New(tooltest.Now))
	for args, want := range map[string]string{
		`{"tz": "UTC"}`:                     `unknown field "tz"`,
		`{"timezone": "Mars/Olympus_Mons"}`: "not an IANA time zone",
		`{"timezone": "Local"}`:             "not an IANA time zone",
		`{"timezone": "` + long() + `"}`:    `"timezone" is too long`,
	} {
		_, err := tooltest.Run(t, r, tools.CurrentTime, args)
		tooltest.WantArgError(t, err, tools.CurrentTime, want)
	}
}

func long() string { return strings.Repeat("x", 65) }

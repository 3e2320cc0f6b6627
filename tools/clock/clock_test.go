package tools

import "testing"

func TestCurrentTime(t *testing.T) {
	r := newTestRegistry(t, Deps{}) // clock: 2026-05-01 18:03:22 UTC
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
			wantOK(t, mustRun(t, r, CurrentTime, tt.args), tt.want...)
		})
	}
}

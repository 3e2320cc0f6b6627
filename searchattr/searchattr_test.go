package searchattr

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.temporal.io/server/temporaltest"
)

// On a real server: Check refuses a namespace without the attributes and names the commands that
// fix it; Register adds them (twice is fine) and returns once a query on them is accepted.
func TestRegisterThenCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	srv := temporaltest.NewServer()
	t.Cleanup(srv.Stop)
	c, ns := srv.GetDefaultClient(), srv.GetDefaultNamespace()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	err := Check(ctx, c, ns)
	if err == nil || !strings.Contains(err.Error(), "LucyOutcome") || !strings.Contains(err.Error(), "`lucy setup`") || !strings.Contains(err.Error(), "temporal operator search-attribute create --namespace "+ns+" --name LucyWorkspace --type Keyword") {
		t.Fatalf("Check before registration: %v", err)
	}
	start := time.Now()
	if err := Register(ctx, c, ns); err != nil {
		t.Fatal(err)
	}
	t.Logf("registered and usable after %s", time.Since(start))
	if err := Register(ctx, c, ns); err != nil {
		t.Fatalf("second Register: %v", err)
	}
	if err := Check(ctx, c, ns); err != nil {
		t.Fatalf("Check after registration: %v", err)
	}
}

func TestQuotable(t *testing.T) {
	for team, want := range map[string]bool{"T0123": true, "TLOCAL": true, "": false, "T1' OR 1=1 --": false, strings.Repeat("T", 65): false} {
		if Quotable(team) != want {
			t.Errorf("Quotable(%q) = %v", team, !want)
		}
	}
}

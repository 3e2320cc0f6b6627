package openapi

import (
	"slices"
	"testing"

	"github.com/lucy-agent/lucy/tools/tooltest"
	"github.com/lucy-agent/lucy/workspace"
)

// A worker's cache of the teams' services is bounded by bytes: past the bound, the team used
// longest ago is dropped, and its tools are read again from the registry when it is next served.
func TestServicesCacheEvictsTheLeastRecentlyUsedTeam(t *testing.T) {
	api := newPetAPI(t)
	e := newEnv(t, envOpts{})
	resolvePets(t, e, api)
	data, _, err := e.state.Read(t.Context(), tooltest.Team, objectPath("pets"))
	if err != nil {
		t.Fatal(err)
	}
	teams := []string{"T1", "T2", "T3"}
	for _, team := range teams {
		if _, err := e.state.Write(t.Context(), team, objectPath("pets"), data, workspace.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	want := e.toolNames(t)
	e.svc.forget(tooltest.Team)
	serve := func(team string) {
		t.Helper()
		list, err := e.svc.Tools(t.Context(), team)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tl := range list {
			got = append(got, tl.Spec.Name)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("%s's tools = %v, want %v", team, got, want)
		}
	}
	cached := func() []string {
		e.svc.mu.Lock()
		defer e.svc.mu.Unlock()
		var out []string
		n := 0
		for team, c := range e.svc.teams {
			out = append(out, team)
			n += c.bytes
		}
		if n != e.svc.cachedBytes {
			t.Errorf("the cache counts %d bytes, its teams %d", e.svc.cachedBytes, n)
		}
		slices.Sort(out)
		return out
	}

	// Room for two teams' services.
	serve("T1")
	one := e.svc.cachedBytes
	if one < len(data)/2 {
		t.Fatalf("a team's services count %d bytes, its record is %d", one, len(data))
	}
	e.svc.maxCached = 2*one + one/2
	serve("T2")
	serve("T1") // T1 used after T2
	serve("T3") // over the bound: T2, used longest ago, goes
	if got := cached(); !slices.Equal(got, []string{"T1", "T3"}) {
		t.Errorf("cached teams = %v, want T1 and T3 (T2 used longest ago)", got)
	}
	if e.svc.cachedBytes > e.svc.maxCached {
		t.Errorf("the cache holds %d bytes, over its bound of %d", e.svc.cachedBytes, e.svc.maxCached)
	}
	// T2 is served again from the registry, and T1 goes in its turn.
	serve("T2")
	if got := cached(); !slices.Equal(got, []string{"T2", "T3"}) {
		t.Errorf("cached teams = %v, want T2 and T3", got)
	}
	// Read again after the TTL, a team replaces its own count rather than adding to it.
	e.later()
	serve("T3")
	if got := cached(); !slices.Equal(got, []string{"T2", "T3"}) || e.svc.cachedBytes != 2*one {
		t.Errorf("cached teams = %v (%d bytes), want T2 and T3 (%d bytes)", got, e.svc.cachedBytes, 2*one)
	}
	// A bound below one team's services still keeps the team being served.
	e.svc.maxCached = 1
	serve("T1")
	if got := cached(); !slices.Equal(got, []string{"T1"}) {
		t.Errorf("cached teams = %v, want T1 alone", got)
	}
	e.svc.forget("T1")
	if got := cached(); len(got) != 0 || e.svc.cachedBytes != 0 {
		t.Errorf("after forget: %v, %d bytes", got, e.svc.cachedBytes)
	}
}

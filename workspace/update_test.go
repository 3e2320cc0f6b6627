package workspace

import (
	"context"
	"strings"
	"sync"
	"testing"
)

type counter struct {
	N   int      `json:"n"`
	IDs []string `json:"ids"`
}

// Writers that change one object at once lose nothing: each one's change is in the result once.
func TestUpdateJSONLosesNothingUnderConcurrentWriters(t *testing.T) {
	st := NewLocal(t.TempDir())
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := string(rune('a' + i))
			err := UpdateJSON(ctx, st, "T1", "c/counter.json", 100, func(c *counter) bool {
				for _, have := range c.IDs {
					if have == id {
						return false
					}
				}
				c.N++
				c.IDs = append(c.IDs, id)
				return true
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var got counter
	if err := UpdateJSON(ctx, st, "T1", "c/counter.json", 1, func(c *counter) bool { got = *c; return false }); err != nil {
		t.Fatal(err)
	}
	if got.N != 20 || len(got.IDs) != 20 {
		t.Fatalf("after 20 writers: %+v", got)
	}
}

// A change that changes nothing writes nothing (no object is created); an object that is not JSON
// is an error naming it, and it is left as it was.
func TestUpdateJSONWritesOnlyAChange(t *testing.T) {
	st := NewLocal(t.TempDir())
	ctx := context.Background()
	if err := UpdateJSON(ctx, st, "T1", "c/none.json", 3, func(*counter) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Stat(ctx, "T1", "c/none.json"); err == nil {
		t.Error("an unchanged object was written")
	}
	if _, err := st.Write(ctx, "T1", "c/bad.json", []byte("not json"), Cond{}); err != nil {
		t.Fatal(err)
	}
	err := UpdateJSON(ctx, st, "T1", "c/bad.json", 3, func(c *counter) bool { c.N++; return true })
	if err == nil || !strings.Contains(err.Error(), "c/bad.json") {
		t.Fatalf("a broken object: %v", err)
	}
	if data, _, _ := st.Read(ctx, "T1", "c/bad.json"); string(data) != "not json" {
		t.Errorf("the broken object became %q", data)
	}
}

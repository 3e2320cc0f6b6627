package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"time"
)

// UpdateJSON changes the JSON object rel of team with conditional writes, so that any number of
// writers (workers, gateway replicas, the operator's commands) lose nothing: it reads the object into
// a fresh T (its zero value when there is none), lets change modify it, and writes it back create-only
// (a new object) or If-Match what was read. When another writer got there first, it reads and changes
// the object again, at a random moment rather than in lockstep with the others, up to attempts times.
// change reports whether it changed anything: nothing is written when not. change must be safe to
// call again on what another writer made of the object.
func UpdateJSON[T any](ctx context.Context, st Store, team, rel string, attempts int, change func(*T) bool) error {
	for attempt := range attempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(rand.IntN(5*attempt)+1) * time.Millisecond):
			}
		}
		var v T
		cond := Cond{IfNoneMatch: true}
		data, info, err := st.Read(ctx, team, rel)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return fmt.Errorf("read %s: %w", rel, err)
		default:
			if err := json.Unmarshal(data, &v); err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			cond = Cond{IfMatch: info.ETag}
		}
		if !change(&v) {
			return nil
		}
		out, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = st.Write(ctx, team, rel, out, cond)
		if !errors.Is(err, ErrPrecondition) {
			if err != nil {
				return fmt.Errorf("write %s: %w", rel, err)
			}
			return nil
		}
	}
	return fmt.Errorf("%s kept changing under other writers", rel)
}

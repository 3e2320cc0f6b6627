package email

import (
	"context"
	"path"
)

// ListenerSchedules keeps each mailbox's listener Schedule in step with its settings: Sync creates
// or updates it when the mailbox has a channel and deletes it when not; Remove deletes it.
type ListenerSchedules interface {
	Sync(ctx context.Context, team string, m Mailbox) error
	Remove(ctx context.Context, team, name string) error
}

// cursorObject is where the listener keeps how far it has read a mailbox's INBOX.
func cursorObject(name string) string { return path.Join(stateDir, name+".cursor.json") }

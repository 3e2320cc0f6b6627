package integrations

import "context"

// Connectable lists the services a team can connect by name and has not (the service catalogue,
// package integrations/catalog): lucy_list_integrations shows them after what is connected.
type Connectable interface {
	// ConnectableFor is one line per service, as user sees what is connected: its name and how to
	// connect it ("Linear (connect with: connect Linear)").
	ConnectableFor(ctx context.Context, team, user string) []string
}

// WithConnectable makes lucy_list_integrations also list what c can connect; it returns k.
func (k *Keys) WithConnectable(c Connectable) *Keys {
	k.connectable = c
	return k
}

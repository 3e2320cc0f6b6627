package slackwire

import "strings"

// The Add key button: a run posts it (package integrations, lucy_store_api_key) and the gateway
// answers its click with a form (a Slack modal) whose submission it stores. Both sides read these
// names, so they live here, once.
const (
	// AddKeyAction is the button's action_id.
	AddKeyAction = "lucy_add_key"
	// AddKeyBlock is the block_id of the message's actions block.
	AddKeyBlock = "lucy_add_key"
	// AddKeyMetadata is the event_type of the metadata on the message with the button, naming the
	// run and the tool call that posted it, so that a retried call finds it instead of posting again.
	AddKeyMetadata = "lucy_key_request"
	// AddKeyView is the callback_id of the form (modal) the click opens.
	AddKeyView = "lucy_add_key"
	// AddKeyInputBlock and AddKeyInputAction identify the form's input: the key is at
	// view.state.values[AddKeyInputBlock][AddKeyInputAction].value.
	AddKeyInputBlock  = "lucy_key"
	AddKeyInputAction = "lucy_key_value"
)

// AddKey is the JSON value of the Add key button and the private_metadata of its form: which
// team's credential for which service, who asked for it (the requester may add a new key), and the
// thread the gateway hands "I added the key" to. It never holds a key.
type AddKey struct {
	Team      string `json:"team"`
	Channel   string `json:"channel"`
	ThreadTS  string `json:"thread"`
	Service   string `json:"service"`
	Requester string `json:"requester"`
	// Origin and Integration say what asked for the key ("https://mcp.example.com", "mcp:notes"): the
	// key is stored bound to that origin and sent nowhere else (secrets.Binding). Empty when a person
	// asked for a key with no integration in view: it is then bound when its owner attaches it.
	Origin      string `json:"origin,omitempty"`
	Integration string `json:"integration,omitempty"`
	// Kind is set when an integration asks for a credential of its own kind under its reserved name
	// (a mailbox's password: "mailbox"); empty for an ordinary key.
	Kind string `json:"kind,omitempty"`
}

// KeyAddedText is the message the lane gets, in the submitter's name, once the Add key form stored
// a key: never the key itself.
func KeyAddedText(service string) string { return "I added the key for `" + service + "`." }

// IsKeyAdded reports whether text (mentions stripped) is KeyAddedText: the lane folds it into the
// running request (which may be waiting for exactly that), whatever the request is doing.
func IsKeyAdded(text string) bool {
	rest, ok := strings.CutPrefix(strings.TrimSpace(text), "I added the key for `")
	return ok && strings.HasSuffix(rest, "`.") && !strings.ContainsAny(strings.TrimSuffix(rest, "`."), "` \n")
}

package browser

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"

	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
)

// Credentials is the credential store as lucy_browse uses it (*secrets.Store): a fill_secret step
// reads the person's key inside the activity, and a key the person approved typing on a site is
// bound to that site.
type Credentials interface {
	Get(ctx context.Context, team, service string) (string, secrets.Meta, error)
	Stat(ctx context.Context, team, service string) (secrets.Meta, error)
	Bind(ctx context.Context, team, service, origin string) (secrets.Meta, error)
}

// KeyRequester posts the Add key button for a missing key (integrations.SlackKeys): the key then
// goes from the form to the credential store, never through the model.
type KeyRequester interface {
	RequestKey(ctx context.Context, inv tools.Invocation, service, why string, for_ secrets.Binding) error
}

// WithSessions gives lucy_browse its named sessions; without them a call naming one is refused.
func (b *Browser) WithSessions(s *Sessions) *Browser {
	b.sessions = s
	return b
}

// WithCredentials gives fill_secret steps the credential store, and keys the Add key button for a
// missing key (nil: the person is told to ask an operator).
func (b *Browser) WithCredentials(c Credentials, keys KeyRequester) *Browser {
	b.creds, b.keys = c, keys
	return b
}

// Integration is what lucy_list_integrations shows a key asked for by a fill_secret step was for.
const Integration = "browser"

// checkKeys checks the keys the fill_secret steps name before anything opens, by the credential
// rule (docs/security.md): the requester's own key (or one shared with the team, or the
// operator's), of kind key, never a reserved name. A missing key gets an Add key button bound to
// the URL's origin, and the call stops (stop). A key not yet given for the URL's origin that the
// requester owns is returned in attach: typing it there waits for the person's approval, which
// binds it. Where the page is when a step types it is checked again then (secretFor).
func (b *Browser) checkKeys(ctx context.Context, inv tools.Invocation, u *url.URL, steps []step) (attach []string, stop *tools.Output, err error) {
	origin := secrets.Origin(u)
	var names []string
	for _, s := range steps {
		if s.Action != "fill_secret" {
			continue
		}
		name, _ := secrets.NormalizeService(s.Text)
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil, nil, nil
	}
	if b.creds == nil {
		return nil, nil, tools.ArgErrorf(Browse, "no stored keys can be typed on this worker (it has no credential store); log in another way or tell the person")
	}
	if !personRE.MatchString(inv.User) {
		return nil, nil, tools.ArgErrorf(Browse, "a stored key is typed only in a person's own request, and this request is nobody's")
	}
	for _, name := range names {
		if secrets.Reserved(name) {
			return nil, nil, tools.ArgErrorf(Browse, "the key %q cannot be typed into a page: %v", name, secrets.ErrReserved)
		}
		meta, err := b.creds.Stat(ctx, inv.Team, name)
		if errors.Is(err, secrets.ErrNotFound) {
			msg := fmt.Sprintf("Nothing was opened: the key %q is not stored.", name)
			if b.keys == nil {
				return nil, &tools.Output{Content: msg + " Tell the person an operator must store it (lucy secrets set), or log in another way.", IsError: true}, nil
			}
			why := "signing in to " + origin + " in the browser"
			if err := b.keys.RequestKey(ctx, inv, name, why, secrets.Binding{Origins: []string{origin}, Integration: Integration}); err != nil {
				return nil, &tools.Output{Content: msg + " Asking for it failed (" + tools.RedactCredentials(err.Error()) +
					"): tell the person to store it with an Add key button or ask an operator.", IsError: true}, nil
			}
			return nil, &tools.Output{Content: msg + " I posted an Add key button in this thread: tell the person to add it there " +
				"(never in a message), then call again with the same steps."}, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("look up the stored key %s: %w", name, err)
		}
		if meta.KindOrKey() != secrets.KindKey {
			return nil, nil, tools.ArgErrorf(Browse, "%q is not a key a person added (it is a %s) and cannot be typed into a page", name, meta.KindOrKey())
		}
		if !meta.UsableBy(inv.User) {
			return nil, &tools.Output{Content: fmt.Sprintf("Nothing was opened: the key %q is <@%s>'s own and is typed only in their "+
				"requests; an admin can share it with the team, or the person can add their own.", name, meta.Owner), IsError: true}, nil
		}
		if meta.BoundTo(origin) {
			continue
		}
		if err := secrets.MayAttach(meta, inv.User, false); err != nil {
			return nil, &tools.Output{Content: "Nothing was opened: " + secrets.Applies(meta, origin, inv.User).Error() + ".", IsError: true}, nil
		}
		attach = append(attach, name)
	}
	return attach, nil, nil
}

// secretFor returns the fill_secret steps' key reader for the call: the value of the requester's
// key, only for a page whose origin the key is bound to (the page may have moved since checkKeys).
func (b *Browser) secretFor(inv tools.Invocation) func(ctx context.Context, key, origin string) (string, error) {
	if b.creds == nil {
		return nil
	}
	return func(ctx context.Context, key, origin string) (string, error) {
		value, meta, err := b.creds.Get(ctx, inv.Team, key)
		if errors.Is(err, secrets.ErrNotFound) {
			return "", fmt.Errorf("the key %q is not stored", key)
		}
		if err != nil {
			return "", err
		}
		if meta.KindOrKey() != secrets.KindKey || secrets.Reserved(meta.Service) {
			return "", fmt.Errorf("%q is not a key a person added", key)
		}
		if err := secrets.Applies(meta, origin, inv.User); err != nil {
			return "", fmt.Errorf("the page is now at %s: %w", origin, err)
		}
		return value, nil
	}
}

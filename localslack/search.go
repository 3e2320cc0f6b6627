package localslack

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// searchMessages is search.messages: every message (thread replies included) whose text contains each
// word of the query, case-insensitively, newest first with sort=timestamp (the default here).
// Slack's modifiers in:#name and from:@name (or from:<@U…>) filter; other modifiers are ignored.
// Like Slack, it refuses bot tokens: search needs a user token.
func (s *Server) searchMessages(c *call) (reply, *apiError) {
	if c.who.bot {
		return nil, errCode("not_allowed_token_type")
	}
	query := strings.TrimSpace(c.p.Get("query"))
	if query == "" {
		return nil, errCode("no_query")
	}
	var words []string
	inChannel, fromUser := "", ""
	for _, w := range strings.Fields(query) {
		switch {
		case strings.HasPrefix(w, "in:"):
			inChannel = strings.TrimPrefix(strings.TrimPrefix(w, "in:"), "#")
		case strings.HasPrefix(w, "from:"):
			fromUser = strings.Trim(strings.TrimPrefix(w, "from:"), "@<>")
		case strings.Contains(w, ":") && !strings.Contains(w, "://"):
		default:
			words = append(words, strings.ToLower(w))
		}
	}
	type match struct {
		ch  *channelState
		msg *Message
	}
	var found []match
	for _, id := range s.chanOrder {
		cs := s.channels[id]
		if inChannel != "" && cs.info.Name != inChannel && cs.info.ID != inChannel {
			continue
		}
		for _, m := range cs.msgs {
			if fromUser != "" && m.User != fromUser && s.users[m.User].Name != fromUser {
				continue
			}
			text := strings.ToLower(m.Text)
			ok := len(words) > 0
			for _, w := range words {
				ok = ok && strings.Contains(text, w)
			}
			if ok {
				found = append(found, match{cs, m})
			}
		}
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].msg.TS > found[j].msg.TS })
	count := 20
	if n, err := strconv.Atoi(c.p.Get("count")); err == nil && n > 0 {
		count = min(n, 100)
	}
	total := len(found)
	if len(found) > count {
		found = found[:count]
	}
	matches := []map[string]any{}
	for _, f := range found {
		matches = append(matches, map[string]any{
			"iid": "iid-" + f.msg.TS, "team": s.opts.Team, "type": "message", "user": f.msg.User,
			"username": s.users[f.msg.User].Name, "ts": f.msg.TS, "text": f.msg.Text,
			"permalink": fmt.Sprintf("%sarchives/%s/p%s", strings.TrimSuffix(c.base, "api/"), f.ch.info.ID, strings.ReplaceAll(f.msg.TS, ".", "")),
			"channel": map[string]any{"id": f.ch.info.ID, "name": f.ch.info.Name, "is_channel": !f.ch.info.IsIM && !f.ch.info.IsPrivate,
				"is_private": f.ch.info.IsPrivate, "is_im": f.ch.info.IsIM},
		})
	}
	pages := (total + count - 1) / count
	return reply{
		"query": query,
		"messages": map[string]any{
			"total": total, "matches": matches,
			"paging":     map[string]any{"count": count, "total": total, "page": 1, "pages": pages},
			"pagination": map[string]any{"total_count": total, "page": 1, "per_page": count, "page_count": pages, "first": 1, "last": len(matches)},
		},
	}, nil
}

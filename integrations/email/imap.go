package email

import (
	"fmt"
	"slices"

	"github.com/emersion/go-imap/v2"
)

// fullBody is the whole message, fetched without setting \Seen: reading mail for the model must not
// mark it read for the people who share the mailbox.
var fullBody = &imap.FetchItemBodySection{Peek: true}

// examine opens folder read-only.
func (s *imapSession) examine(folder string) (*imap.SelectData, error) {
	d, err := s.c.Select(folder, &imap.SelectOptions{ReadOnly: true}).Wait()
	if err != nil {
		return nil, fmt.Errorf("open the folder %q: %w", folder, err)
	}
	return d, nil
}

// search returns the UIDs that match in the open folder, ascending.
func (s *imapSession) search(c *imap.SearchCriteria) ([]imap.UID, error) {
	d, err := s.c.UIDSearch(c, nil).Wait()
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	uids := d.AllUIDs()
	slices.Sort(uids)
	return uids, nil
}

// fetch reads the messages of uids in the open folder, parsed, in the order of uids.
func (s *imapSession) fetch(uids []imap.UID) ([]letter, error) {
	if len(uids) == 0 {
		return nil, nil
	}
	bufs, err := s.c.Fetch(imap.UIDSetNum(uids...), &imap.FetchOptions{UID: true, RFC822Size: true,
		BodySection: []*imap.FetchItemBodySection{fullBody}}).Collect()
	if err != nil {
		return nil, fmt.Errorf("fetch: %w", err)
	}
	byUID := make(map[imap.UID]letter, len(bufs))
	for _, b := range bufs {
		l := parseLetter(b.FindBodySection(fullBody))
		l.UID = uint32(b.UID)
		byUID[b.UID] = l
	}
	out := make([]letter, 0, len(uids))
	for _, u := range uids {
		if l, ok := byUID[u]; ok {
			out = append(out, l)
		}
	}
	return out, nil
}

// findMessageID returns the UIDs in the open folder whose Message-ID is id (without brackets).
func (s *imapSession) findMessageID(id string) ([]imap.UID, error) {
	return s.search(&imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "Message-ID", Value: "<" + id + ">"}}})
}

// appendMessage saves raw in folder with flags.
func (s *imapSession) appendMessage(folder string, raw []byte, flags ...imap.Flag) error {
	cmd := s.c.Append(folder, int64(len(raw)), &imap.AppendOptions{Flags: flags})
	if _, err := cmd.Write(raw); err != nil {
		_ = cmd.Close()
		return err
	}
	if err := cmd.Close(); err != nil {
		return err
	}
	_, err := cmd.Wait()
	return err
}

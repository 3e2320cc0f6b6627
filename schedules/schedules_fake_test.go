package schedules

import (
	"context"
	"fmt"
	"slices"
	"sync"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// fakeSchedules is an in-memory client.ScheduleClient for the scheduling tools' tests. It returns what
// the SDK's client returns from the server: a description's action arguments and memos are payloads
// (encoded with the default data converter), a missing schedule is serviceerror.NotFound, an existing
// ID serviceerror.AlreadyExists, and Update hands DoUpdate the current description.
type fakeSchedules struct {
	mu sync.Mutex
	dc converter.DataConverter
	m  map[string]*fakeSchedule
	// beforeUpdate, when set, runs once inside the next Update before DoUpdate reads the schedule
	// (a change by someone else between a tool's check and its write).
	beforeUpdate func()
}

type fakeSchedule struct {
	spec               client.ScheduleSpec
	action             *client.ScheduleWorkflowAction // Args and Memo as payloads
	memo               *commonpb.Memo
	paused             bool
	note               string
	triggers           int
	triggerImmediately bool
}

func newFakeSchedules() *fakeSchedules {
	return &fakeSchedules{dc: converter.GetDefaultDataConverter(), m: map[string]*fakeSchedule{}}
}

var _ client.ScheduleClient = (*fakeSchedules)(nil)

func (f *fakeSchedules) payload(v any) *commonpb.Payload {
	if p, ok := v.(*commonpb.Payload); ok {
		return p
	}
	p, err := f.dc.ToPayload(v)
	if err != nil {
		panic(err)
	}
	return p
}

// encodeAction stores an action as the server returns it: arguments and memo as payloads.
func (f *fakeSchedules) encodeAction(a client.ScheduleAction) *client.ScheduleWorkflowAction {
	wa, ok := a.(*client.ScheduleWorkflowAction)
	if !ok {
		panic(fmt.Sprintf("fake schedules: action %T", a))
	}
	out := *wa
	out.Args = nil
	for _, arg := range wa.Args {
		out.Args = append(out.Args, f.payload(arg))
	}
	out.Memo = map[string]any{}
	for k, v := range wa.Memo {
		out.Memo[k] = f.payload(v)
	}
	return &out
}

func (f *fakeSchedules) memo(m map[string]any) *commonpb.Memo {
	out := &commonpb.Memo{Fields: map[string]*commonpb.Payload{}}
	for k, v := range m {
		out.Fields[k] = f.payload(v)
	}
	return out
}

func (f *fakeSchedules) Create(_ context.Context, o client.ScheduleOptions) (client.ScheduleHandle, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.m[o.ID]; ok {
		return nil, serviceerror.NewAlreadyExists("schedule with this ID is already registered")
	}
	f.m[o.ID] = &fakeSchedule{spec: o.Spec, action: f.encodeAction(o.Action), memo: f.memo(o.Memo), paused: o.Paused,
		triggerImmediately: o.TriggerImmediately}
	return &fakeHandle{f: f, id: o.ID}, nil
}

func (f *fakeSchedules) List(context.Context, client.ScheduleListOptions) (client.ScheduleListIterator, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for id := range f.m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	it := &fakeIterator{}
	for _, id := range ids {
		s := f.m[id]
		spec := s.spec
		it.entries = append(it.entries, &client.ScheduleListEntry{ID: id, Spec: &spec, Paused: s.paused, Note: s.note, Memo: s.memo})
	}
	return it, nil
}

func (f *fakeSchedules) GetHandle(_ context.Context, id string) client.ScheduleHandle {
	return &fakeHandle{f: f, id: id}
}

// get returns a copy of a schedule, for the tests' assertions; ok is false when there is none.
func (f *fakeSchedules) get(id string) (fakeSchedule, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.m[id]
	if !ok {
		return fakeSchedule{}, false
	}
	return *s, true
}

// ids lists the schedules' IDs, sorted.
func (f *fakeSchedules) ids() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for id := range f.m {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

type fakeIterator struct{ entries []*client.ScheduleListEntry }

func (it *fakeIterator) HasNext() bool { return len(it.entries) > 0 }
func (it *fakeIterator) Next() (*client.ScheduleListEntry, error) {
	e := it.entries[0]
	it.entries = it.entries[1:]
	return e, nil
}

type fakeHandle struct {
	f  *fakeSchedules
	id string
}

func (h *fakeHandle) GetID() string { return h.id }

func (h *fakeHandle) notFound() error {
	return serviceerror.NewNotFound("schedule not found: " + h.id)
}

func (h *fakeHandle) Delete(context.Context) error {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	if _, ok := h.f.m[h.id]; !ok {
		return h.notFound()
	}
	delete(h.f.m, h.id)
	return nil
}

func (h *fakeHandle) Backfill(context.Context, client.ScheduleBackfillOptions) error {
	return fmt.Errorf("fake schedules: Backfill is not used by the tools")
}

// describe builds the description under the lock.
func (h *fakeHandle) describe() (*client.ScheduleDescription, error) {
	s, ok := h.f.m[h.id]
	if !ok {
		return nil, h.notFound()
	}
	act := *s.action
	act.Args = slices.Clone(s.action.Args)
	spec := s.spec
	return &client.ScheduleDescription{
		Schedule: client.Schedule{Action: &act, Spec: &spec, State: &client.ScheduleState{Paused: s.paused, Note: s.note}},
		Memo:     s.memo,
	}, nil
}

func (h *fakeHandle) Describe(context.Context) (*client.ScheduleDescription, error) {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	return h.describe()
}

func (h *fakeHandle) Update(_ context.Context, o client.ScheduleUpdateOptions) error {
	if hook := h.f.beforeUpdate; hook != nil {
		h.f.beforeUpdate = nil
		hook()
	}
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	d, err := h.describe()
	if err != nil {
		return err
	}
	u, err := o.DoUpdate(client.ScheduleUpdateInput{Description: *d})
	if err != nil {
		return err
	}
	s := h.f.m[h.id]
	if u.Schedule.Spec != nil {
		s.spec = *u.Schedule.Spec
	}
	s.action = h.f.encodeAction(u.Schedule.Action)
	return nil
}

func (h *fakeHandle) Trigger(context.Context, client.ScheduleTriggerOptions) error {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	s, ok := h.f.m[h.id]
	if !ok {
		return h.notFound()
	}
	s.triggers++
	return nil
}

func (h *fakeHandle) Pause(_ context.Context, o client.SchedulePauseOptions) error {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	s, ok := h.f.m[h.id]
	if !ok {
		return h.notFound()
	}
	s.paused, s.note = true, o.Note
	return nil
}

func (h *fakeHandle) Unpause(_ context.Context, o client.ScheduleUnpauseOptions) error {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	s, ok := h.f.m[h.id]
	if !ok {
		return h.notFound()
	}
	s.paused, s.note = false, o.Note
	return nil
}

package stats

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/segmentio/encoding/json"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/every"
	"github.com/agentplane/agentplane/shared/outbox"
)

// Delivery is one event of the stream and its sequence number there.
type Delivery struct {
	Seq   uint64
	Event outbox.Event
}

// Tail delivers the chat.message.* events that follow the stream sequence after (when after is
// 0, those published since since), in the stream's order and in batches, to each, until ctx
// ends (nil) or each fails (its error).
type Tail func(ctx context.Context, after uint64, since time.Time, each func(context.Context, []Delivery) error) error

// Ledger keeps what the recorder folds (hours) and its place in the stream.
type Ledger interface {
	// HoursByID returns the stored hours among ids, by id.
	HoursByID(ctx context.Context, ids []string) (map[string]Hourly, error)
	// PutHour writes h over the stored hour of sequence prev (0: none is stored); false when
	// another write came first.
	PutHour(ctx context.Context, h Hourly, prev uint64) (bool, error)
	// Claim makes owner the recorder until until unless another's claim holds: the place it
	// resumes from (0: none yet) and whether owner holds the claim.
	Claim(ctx context.Context, owner string, until time.Time) (uint64, bool, error)
	// Advance moves owner's place to seq (never back) and renews its claim until until; false
	// when the claim is no longer owner's.
	Advance(ctx context.Context, owner string, seq uint64, until time.Time) (bool, error)
	// Release gives owner's claim up, if it still holds it.
	Release(ctx context.Context, owner string) error
}

// Agents tells the recorder which agents exist (it keeps nothing of others).
type Agents interface {
	Get(ctx context.Context, projectID, idOrUUID string) (agents.Bot, error)
}

// Messages reads a message an event left out (it was too large to carry).
type Messages interface {
	Message(ctx context.Context, projectID, botID, id string) (chats.Message, error)
}

// Recorder folds the chat.message.* events into the hours and votes the statistics read, in
// the stream's order: one recorder at a time holds the claim (others wait to take it over),
// and each page of an hour remembers the last event folded into it, so an event delivered again
// (after a crash, or to a recorder whose claim lapsed) is never counted twice.
type Recorder struct {
	ledger   Ledger
	agents   Agents
	messages Messages
	tail     Tail
	owner    string
	since    time.Time
	log      *slog.Logger

	// mu makes batches fold one at a time; it guards layouts and kept.
	mu sync.Mutex
	// layouts are how the hours this recorder folded into lately are kept; kept the documents of
	// them it last read or wrote, which a batch need not read again: each write is conditional on
	// the sequence it was read at, so a document another recorder wrote meanwhile is read again
	// (and folded into again) rather than overwritten. Each is emptied when it outgrows its bound.
	layouts map[string]layout
	kept    map[string]Hourly
}

// layout is how an hour is kept: in pages that take its events in the stream's order or, begun
// before they did, in chat pages; with or without the one document it was kept in before hours
// were paged.
type layout struct {
	chatPages, unpaged bool
}

// The bounds of a recorder's layouts and kept documents: a batch folds into the open and first
// pages of the hours it touches, those of the last day at most.
const (
	maxLayouts = 1024
	maxKept    = 64
)

// NewRecorder returns the recorder owner (a name unique to the process), reading events with
// tail; the first recorder of a deployment starts at the events published since since.
func NewRecorder(ledger Ledger, a Agents, m Messages, tail Tail, owner string, since time.Time, log *slog.Logger) *Recorder {
	return &Recorder{ledger: ledger, agents: a, messages: m, tail: tail, owner: owner, since: since, log: log.With("component", "stats"),
		layouts: map[string]layout{}, kept: map[string]Hourly{}}
}

// claimFor is how long a claim holds without renewal; retryAfter how long a recorder without
// the claim (or whose tail failed) waits before trying again.
const (
	claimFor   = 30 * time.Second
	retryAfter = 5 * time.Second
)

// errClaimLost ends a recorder's tail when another took its claim.
var errClaimLost = errors.New("stats: the recorder's claim was taken over")

// Run records until ctx ends, then gives its claim up (another recorder takes over at once).
func (r *Recorder) Run(ctx context.Context) {
	for {
		if err := r.lead(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("recording statistics", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(retryAfter):
		}
	}
}

// lead takes the claim if it is free and records until it is lost or the tail fails, renewing
// the claim while events are few.
func (r *Recorder) lead(ctx context.Context) error {
	at, ok, err := r.ledger.Claim(ctx, r.owner, time.Now().Add(claimFor))
	if err != nil || !ok {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := r.ledger.Release(ctx, r.owner); err != nil {
			r.log.Warn("giving the statistics recorder's claim up", "error", err)
		}
	}()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var mu sync.Mutex
	place := at
	advance := func(seq uint64) error {
		mu.Lock()
		defer mu.Unlock()
		place = max(place, seq)
		held, err := r.ledger.Advance(ctx, r.owner, place, time.Now().Add(claimFor))
		if err == nil && !held {
			err = errClaimLost
		}
		return err
	}
	go every.Tick(ctx, claimFor/3, func() bool {
		err := advance(0)
		if err != nil {
			cancel(err)
		}
		return err == nil
	})
	err = r.tail(ctx, at, r.since, func(ctx context.Context, batch []Delivery) error {
		if err := r.Record(ctx, batch); err != nil {
			return err
		}
		return advance(batch[len(batch)-1].Seq)
	})
	return errors.Join(err, context.Cause(ctx))
}

// change is what one event changes in an hour: the chat it is about and when its message was
// written, the message whose votes it sets (none: it counts a message), and the event's sequence.
type change struct {
	seq           uint64
	at            time.Time
	chat, message string
	apply         func(*Hourly)
}

// pending are the changes a batch makes to one hour of an agent.
type pending struct {
	projectID, botID string
	at               time.Time
	changes          []change
}

// hourChanges are the changes of a batch by hour, the hours in the order they were first
// changed.
type hourChanges struct {
	ids     []string
	pending map[string]*pending
}

func (hs *hourChanges) add(projectID, botID string, c change) {
	id := HourlyID(botID, c.at)
	p := hs.pending[id]
	if p == nil {
		p = &pending{projectID: projectID, botID: botID, at: c.at}
		hs.pending[id] = p
		hs.ids = append(hs.ids, id)
	}
	p.changes = append(p.changes, c)
}

// Record folds batch (in stream order) into the hours: a message into the page of its chat in
// the hour it was written in, its votes (as an event sets them) into that page too.
func (r *Recorder) Record(ctx context.Context, batch []Delivery) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	hs := &hourChanges{pending: map[string]*pending{}}
	known := map[string]bool{}
	for _, d := range batch {
		ev := d.Event
		if ok, err := r.known(ctx, known, ev); err != nil || !ok {
			if err != nil {
				return err
			}
			continue
		}
		m, err := r.message(ctx, ev)
		if err != nil {
			return err
		}
		if m.UUID == "" {
			continue
		}
		switch ev.Type {
		case outbox.ChatMessageCreated:
			f := factOf(m)
			hs.add(ev.ProjectID, ev.BotID, change{seq: d.Seq, at: m.CreatedAt, chat: m.ChatID, apply: func(h *Hourly) { h.add(f) }})
		case outbox.ChatMessageUpdated, outbox.ChatMessageDeleted:
			v := Vote{ChatID: m.ChatID, Role: m.Role, Upvotes: m.Upvotes, Downvotes: m.Downvotes, CreatedAt: m.CreatedAt, Version: m.Version}
			if ev.Type == outbox.ChatMessageDeleted {
				v.Upvotes, v.Downvotes = 0, 0
			}
			id := m.UUID
			hs.add(ev.ProjectID, ev.BotID, change{seq: d.Seq, at: m.CreatedAt, chat: m.ChatID, message: id, apply: func(h *Hourly) { h.vote(id, v) }})
		}
	}
	return r.fold(ctx, hs)
}

// fold applies the changes of each hour of hs not yet applied to it, reading in one read the
// documents the batch touches that the recorder does not keep (and, of an hour it has not
// folded into lately, those that tell how the hour is kept) and writing each page once (again,
// with the rest of its hour, when another recorder wrote it meanwhile).
func (r *Recorder) fold(ctx context.Context, hs *hourChanges) error {
	hours := hs.ids
	for attempt := 0; len(hours) > 0; attempt++ {
		if attempt == 5 {
			return fmt.Errorf("stats: hours %v kept changing under the recorder", hours)
		}
		var ids []string
		for _, id := range hours {
			ids = append(ids, r.unread(id, hs.pending[id])...)
		}
		stored := map[string]Hourly{}
		if len(ids) > 0 {
			var err error
			if stored, err = r.ledger.HoursByID(ctx, ids); err != nil {
				return err
			}
		}
		var again []string
		for _, id := range hours {
			written, err := r.foldHour(ctx, id, hs.pending[id], stored)
			if err != nil {
				return err
			}
			if !written {
				again = append(again, id)
			}
		}
		hours = again
	}
	return nil
}

// unread are the documents of hour id that p's changes touch and the recorder does not keep
// (those it cannot name before reading the hour's first page are read as it folds): of an hour
// whose layout it does not know, every document that tells it too.
func (r *Recorder) unread(id string, p *pending) []string {
	l, known := r.layouts[id]
	var ids []string
	want := func(docID string) {
		if _, ok := r.kept[docID]; (!ok || !known) && !slices.Contains(ids, docID) {
			ids = append(ids, docID)
		}
	}
	if !known || l.unpaged {
		want(id)
	}
	if !known {
		for page := range ChatPages {
			want(id + "." + strconv.Itoa(page))
		}
	}
	for _, c := range p.changes {
		switch {
		case l.chatPages:
			want(ChatPageID(p.botID, c.at, c.chat))
		case c.message != "":
			want(PageID(p.botID, p.at, 0))
		default:
			want(PageID(p.botID, p.at, 0))
			if first, ok := r.kept[PageID(p.botID, p.at, 0)]; ok && known {
				want(PageID(p.botID, p.at, len(first.Pages)))
			}
		}
	}
	return ids
}

// layoutOf is the layout of hour id, learnt from the documents stored when the recorder does not
// know it.
func (r *Recorder) layoutOf(id string, stored map[string]Hourly) layout {
	if l, ok := r.layouts[id]; ok {
		return l
	}
	_, unpaged := stored[id]
	l := layout{unpaged: unpaged}
	for page := range ChatPages {
		if _, ok := stored[id+"."+strconv.Itoa(page)]; ok {
			l.chatPages = true
		}
	}
	if len(r.layouts) >= maxLayouts {
		clear(r.layouts)
	}
	r.layouts[id] = l
	return l
}

// keep remembers h as stored.
func (r *Recorder) keep(h Hourly) {
	if len(r.kept) >= maxKept {
		clear(r.kept)
	}
	r.kept[h.ID] = h
}

// foldHour applies the changes of p not yet applied to the pages of hour id and writes the
// pages it changed, in the order it first touched them, the hour's first page first; false when
// another write came first to one of them (the pages after it are not written). A message event
// goes to the page that takes the hour's events from its sequence on, the open page (the last)
// when the page before it does not hold it; when the open page holds PageChats chats, the event
// opens the next, listed in the first page, whose sequence moves to the event's (so that two
// recorders opening pages do not both write). A vote event goes to the hour's first page.
// When the hour has an unpaged document (written before hours were paged), the events up to the
// sequence it was sealed at are counted in it, and the votes of the messages it holds votes of
// stay in it; an hour begun in chat pages keeps its events and votes in the pages of their chats.
// A document is kept only once written (or when unchanged): one whose write failed is read again.
func (r *Recorder) foldHour(ctx context.Context, id string, p *pending, stored map[string]Hourly) (bool, error) {
	l := r.layoutOf(id, stored)
	docs, prev := map[string]*Hourly{}, map[string]uint64{}
	var order []string
	doc := func(docID string) (*Hourly, error) {
		if h := docs[docID]; h != nil {
			return h, nil
		}
		h, ok := stored[docID]
		if kept, isKept := r.kept[docID]; isKept {
			delete(r.kept, docID)
			if !ok {
				h, ok = kept, true
			}
		}
		if !ok {
			read, err := r.ledger.HoursByID(ctx, []string{docID})
			if err != nil {
				return nil, err
			}
			if h, ok = read[docID]; !ok {
				h = NewHourly(p.projectID, p.botID, p.at)
				h.ID = docID
			}
		}
		docs[docID], prev[docID] = &h, h.Seq
		order = append(order, docID)
		return &h, nil
	}
	var unpaged *Hourly
	var floor uint64
	var err error
	if l.unpaged {
		if unpaged, err = doc(id); err != nil {
			return false, err
		}
		floor = cmp.Or(unpaged.Sealed, unpaged.Seq)
	}
	for _, c := range p.changes {
		var h *Hourly
		switch {
		case unpaged.holdsVotes(c.message):
			h = unpaged
			h.Sealed = floor
		case c.seq <= floor:
		case l.chatPages:
			h, err = doc(ChatPageID(p.botID, c.at, c.chat))
		case c.message != "":
			h, err = doc(PageID(p.botID, p.at, 0))
		default:
			h, err = pageFor(doc, p, c)
		}
		if err != nil {
			return false, err
		}
		if h != nil && c.seq > h.Seq {
			c.apply(h)
			h.Seq = c.seq
		}
	}
	for _, docID := range order {
		h := docs[docID]
		if h.Seq == prev[docID] {
			if h.Seq > 0 {
				r.keep(*h)
			}
			continue
		}
		written, err := r.ledger.PutHour(ctx, *h, prev[docID])
		if err != nil || !written {
			return false, err
		}
		r.keep(*h)
	}
	return true, nil
}

// pageFor is the page of the hour that takes the message event c, opening the next page when
// c comes after the open page's events and the open page is full.
func pageFor(doc func(string) (*Hourly, error), p *pending, c change) (*Hourly, error) {
	first, err := doc(PageID(p.botID, p.at, 0))
	if err != nil {
		return nil, err
	}
	n, _ := slices.BinarySearch(first.Pages, c.seq+1)
	if n < len(first.Pages) {
		return doc(PageID(p.botID, p.at, n))
	}
	open, err := doc(PageID(p.botID, p.at, n))
	if err != nil || c.seq <= open.Seq || len(open.Chats) < PageChats {
		return open, err
	}
	first.Pages = append(first.Pages, c.seq)
	first.Seq = max(first.Seq, c.seq)
	return doc(PageID(p.botID, p.at, n+1))
}

// known reports whether the event's agent exists, asking once per batch.
func (r *Recorder) known(ctx context.Context, known map[string]bool, ev outbox.Event) (bool, error) {
	key := ev.ProjectID + "/" + ev.BotID
	if ok, asked := known[key]; asked {
		return ok, nil
	}
	_, err := r.agents.Get(ctx, ev.ProjectID, ev.BotID)
	if err != nil && !apperr.IsNotFound(err) {
		return false, err
	}
	known[key] = err == nil
	return err == nil, nil
}

// message is the message the event is about: its data, or the stored message when the event
// left it out (a message of the id it names that is gone is the zero message).
func (r *Recorder) message(ctx context.Context, ev outbox.Event) (chats.Message, error) {
	var data chats.MessageEvent
	if err := json.Unmarshal(ev.Data, &data); err != nil {
		r.log.Warn("skipping a message event that does not decode", "event_id", ev.ID, "error", err)
		return chats.Message{}, nil
	}
	if !slices.Contains(ev.Omitted, "message") {
		data.Message.FirstTokenMS = data.FirstTokenMS
		return data.Message, nil
	}
	m, err := r.messages.Message(ctx, ev.ProjectID, ev.BotID, data.MessageID)
	if apperr.IsNotFound(err) {
		return chats.Message{}, nil
	}
	m.FirstTokenMS = data.FirstTokenMS
	return m, err
}

// factOf is what the statistics count of m.
func factOf(m chats.Message) Fact {
	ms, _ := strconv.ParseInt(m.EstimatedTimeMS, 10, 64)
	return Fact{ChatID: m.ChatID, Author: m.User.UUID, Role: m.Role, ReasoningType: m.ReasoningType, Tokens: m.Tokens,
		CreditUsed: m.CreditUsed, EstimatedCost: m.EstimatedCost, ReplyMS: ms, FirstTokenMS: m.FirstTokenMS, CreatedAt: m.CreatedAt, Version: m.Version}
}

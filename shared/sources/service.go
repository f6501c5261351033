package sources

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/tasks"
)

// sourceEvents are the events of memory sources, about the source.
var sourceEvents = outbox.Declare[Source](outbox.SourceCreated, outbox.SourceReady, outbox.SourceFailed, outbox.SourceUpdated,
	outbox.SourceSynced, outbox.SourceExpired, outbox.SourceDeleted)

// ListFilter narrows a list of sources; empty fields match all.
type ListFilter struct {
	Tag    string
	Type   string
	Status string
}

// Repo persists sources and their chunks. Lookups exclude deleted sources.
type Repo interface {
	Insert(ctx context.Context, s Source, ev outbox.Event) error
	Get(ctx context.Context, projectID, botID, idOrUUID string) (Source, error)
	List(ctx context.Context, projectID, botID string, f ListFilter, page paging.Page) ([]Source, int, error)
	// IDs returns the ids of all the agent's sources, in any order.
	IDs(ctx context.Context, projectID, botID string) ([]string, error)
	// Update writes the fields users edit (title, description, tags, forget and sync rules) over
	// the stored source of revision s.Rev-1 (Conflict otherwise); ingestion's fields are left alone.
	Update(ctx context.Context, s Source, ev outbox.Event) error
	// Delete tombstones s and removes its chunks.
	Delete(ctx context.Context, s Source, at time.Time, ev outbox.Event) error

	// Pend makes gen the pending generation of source id, since at, when the pending generation
	// is still from ("" for none). It returns the source as it is afterwards; a source that
	// moved on is returned unchanged.
	Pend(ctx context.Context, id, from, gen string, at time.Time) (Source, error)
	// PendDue makes gen pending when the source is still due at due (or gen is pending already).
	PendDue(ctx context.Context, id string, due time.Time, gen string, at time.Time) (Source, error)
	// Load returns a live source by its id, whatever its project.
	Load(ctx context.Context, id string) (Source, error)
	// PutChunks stores the chunks of one generation, replacing any stored before for it.
	PutChunks(ctx context.Context, sourceID, gen string, chunks []memory.Chunk) error
	// DropGeneration removes the chunks of one generation of a source.
	DropGeneration(ctx context.Context, sourceID, gen string) error
	// Complete writes s's ingestion fields (and clears Pending) when gen is still pending;
	// false when the source was deleted or another generation superseded it.
	Complete(ctx context.Context, s Source, gen string, ev outbox.Event) (bool, error)

	// Due lists sources whose sync is due at now and not pending.
	Due(ctx context.Context, now time.Time, limit int) ([]Source, error)
	// Stuck lists sources pending since before.
	Stuck(ctx context.Context, before time.Time, limit int) ([]Source, error)
	// Expired lists live sources past their forget time at now.
	Expired(ctx context.Context, now time.Time, limit int) ([]Source, error)
	// Forget tombstones an expired source with ev and removes its chunks.
	Forget(ctx context.Context, s Source, at time.Time, ev outbox.Event) error
	// RepairLive re-derives retrieval's list of live sources for the sources changed since
	// (a crash between a source's write and its list's leaves the list behind).
	RepairLive(ctx context.Context, since time.Time) error
	// PurgeDeleted removes the chunks left by deleted sources (an agent's deletion tombstones
	// its sources); it returns how many sources it purged.
	PurgeDeleted(ctx context.Context, limit int) (int, error)
}

// Versions records which sources an agent has in the agent's versions (shared/agents implements
// it).
type Versions interface {
	// SourcesChanged makes a new version of the agent, by by, whose set of sources is its
	// newest version's after c.
	SourcesChanged(ctx context.Context, projectID, botID, by string, c memory.SetChange) error
}

// Service holds the rules of sources users manage.
type Service struct {
	repo      Repo
	versions  Versions
	events    *outbox.Dispatcher
	queue     tasks.Queue
	log       *slog.Logger
	maxSource int
	now       func() time.Time
}

// NewService returns the source service; maxSource bounds inline content in bytes.
func NewService(repo Repo, events *outbox.Dispatcher, queue tasks.Queue, maxSource int, log *slog.Logger) *Service {
	return &Service{repo: repo, events: events, queue: queue, maxSource: maxSource, log: log,
		now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
}

// UseVersions has the creation and deletion of sources make versions of their agents.
func (s *Service) UseVersions(v Versions) { s.versions = v }

// versioned records c, a change of the agent's sources by by, in a new version of the agent. It
// comes before the change is written: a source created is in a version before it is stored, one
// deleted leaves the newest version before it is deleted. What fails in between leaves a version
// naming a source that does not exist (retrieval finds nothing of it, and a retried deletion
// finds it out already), never a source the agent has and no version names.
func (s *Service) versioned(ctx context.Context, projectID, botID, by string, c memory.SetChange) error {
	if s.versions == nil {
		return nil
	}
	return s.versions.SourcesChanged(ctx, projectID, botID, by, c)
}

// SourceIDs returns the ids of the agent's sources (not deleted), in any order.
func (s *Service) SourceIDs(ctx context.Context, projectID, botID string) ([]string, error) {
	return s.repo.IDs(ctx, projectID, botID)
}

// Create stores a new source of the agent as `processing`, made by by, and queues its
// ingestion; the agent's next version has it. When the queue is down the source is kept and the
// reconciler queues it later.
func (s *Service) Create(ctx context.Context, projectID, botID, by string, in Input) (Source, error) {
	now := s.now()
	src := Source{
		ID: ids.ObjectID(), UUID: ids.New(), ProjectID: projectID, BotID: botID,
		ForgetAfter: "never", SyncFrequency: SyncNever, Status: StatusProcessing, Tags: []string{}, Links: []Link{},
		CreatedAt: now, UpdatedAt: now, Pending: newGen(), PendingSince: &now,
	}
	in.apply(&src)
	if err := src.validate(s.maxSource); err != nil {
		return Source{}, err
	}
	src.ForgetAfterAt = forgetAt(src.ForgetAfter, src.CreatedAt)
	if err := s.versioned(ctx, projectID, botID, by, memory.SetChange{Add: []string{src.ID}}); err != nil {
		return Source{}, err
	}
	ev := sourceEvents.New(ctx, outbox.SourceCreated, projectID, botID, src.public())
	if err := s.repo.Insert(ctx, src, ev); err != nil {
		return Source{}, err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: Resource, ID: src.ID}, ev)
	s.enqueue(ctx, src)
	return src.public(), nil
}

func (s *Service) enqueue(ctx context.Context, src Source) {
	if err := s.queue.Enqueue(ctx, tasks.NewSourceIngestTask(src.ID, src.Pending)); err != nil {
		s.log.Warn("ingestion not queued yet; the reconciler will queue it", "source_id", src.ID, "error", err)
	}
}

// Get returns one source of the agent by its id or uuid.
func (s *Service) Get(ctx context.Context, projectID, botID, id string) (Source, error) {
	if id = strings.TrimSpace(id); id == "" {
		return Source{}, apperr.Invalidf("source_id", "is required")
	}
	src, err := s.repo.Get(ctx, projectID, botID, id)
	return src.public(), err
}

// List returns one page of the agent's sources.
func (s *Service) List(ctx context.Context, projectID, botID string, f ListFilter, page paging.Page) ([]Source, int, error) {
	var p apperr.Problems
	if f.Type != "" && !slices.Contains(Types, f.Type) {
		p.Add("type", "must be one of %s", strings.Join(Types, ", "))
	}
	if f.Status != "" && !slices.Contains(Statuses, f.Status) {
		p.Add("status", "must be one of %s", strings.Join(Statuses, ", "))
	}
	if err := p.Err(); err != nil {
		return nil, 0, err
	}
	list, total, err := s.repo.List(ctx, projectID, botID, f, page)
	for i := range list {
		list[i] = list[i].public()
	}
	return list, total, err
}

// Update changes the title, description, tags and the forget and sync rules of a source. Its
// type and content are fixed: a new content is a new source.
func (s *Service) Update(ctx context.Context, projectID, botID, id string, in Input) (Source, error) {
	cur, err := s.Get(ctx, projectID, botID, id)
	if err != nil {
		return Source{}, err
	}
	var p apperr.Problems
	if in.Type != nil && strings.TrimSpace(*in.Type) != "" && strings.TrimSpace(*in.Type) != cur.Type {
		p.Add("type", "cannot be changed; create a new source")
	}
	if in.Source != nil && *in.Source != cur.Source {
		p.Add("source", "cannot be changed; create a new source")
	}
	if err := p.Err(); err != nil {
		return Source{}, err
	}
	next := cur
	in.apply(&next)
	if err := next.validate(s.maxSource); err != nil {
		return Source{}, err
	}
	next.ForgetAfterAt = forgetAt(next.ForgetAfter, next.CreatedAt)
	if next.SyncFrequency != cur.SyncFrequency {
		next.NextSyncAt = nil
		if next.SyncedAt != nil {
			next.NextSyncAt = nextSync(next.SyncFrequency, *next.SyncedAt)
		}
	}
	next.UpdatedAt, next.Rev = s.now(), cur.Rev+1
	ev := sourceEvents.New(ctx, outbox.SourceUpdated, projectID, botID, next.public())
	if err := s.repo.Update(ctx, next, ev); err != nil {
		return Source{}, err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: Resource, ID: next.ID}, ev)
	return next.public(), nil
}

// Delete tombstones a source, a change by by, and removes its chunks: retrieval stops seeing it
// at once, whatever version of the agent answers. The agent's next version is without it.
func (s *Service) Delete(ctx context.Context, projectID, botID, by, id string) error {
	src, err := s.Get(ctx, projectID, botID, id)
	if err != nil {
		return err
	}
	if err := s.versioned(ctx, projectID, botID, by, memory.SetChange{Remove: []string{src.ID}}); err != nil {
		return err
	}
	return s.delete(ctx, projectID, botID, src)
}

func (s *Service) delete(ctx context.Context, projectID, botID string, src Source) error {
	ev := sourceEvents.New(ctx, outbox.SourceDeleted, projectID, botID, src)
	if err := s.repo.Delete(ctx, src, s.now(), ev); err != nil {
		return err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: Resource, ID: src.ID}, ev)
	return nil
}

// Reset deletes every memory source of the agent (each with its event; the sweep purges their
// chunks), a change by by, and returns how many it deleted. The agent's next version has no
// source.
func (s *Service) Reset(ctx context.Context, projectID, botID, by string) (int, error) {
	if err := s.versioned(ctx, projectID, botID, by, memory.SetChange{Clear: true}); err != nil {
		return 0, err
	}
	n := 0
	for {
		list, _, err := s.repo.List(ctx, projectID, botID, ListFilter{}, paging.Page{Page: 1, PerPage: paging.MaxPerPage})
		if err != nil || len(list) == 0 {
			return n, err
		}
		for _, src := range list {
			if err := s.delete(ctx, projectID, botID, src.public()); err != nil && apperr.As(err).Kind != apperr.NotFound {
				return n, err
			}
			n++
		}
	}
}

// Sync ingests a source again now. Retrieval keeps answering from the current chunks until
// the new ones replace them; a sync already under way is not started twice.
func (s *Service) Sync(ctx context.Context, projectID, botID, id string) (Source, error) {
	cur, err := s.Get(ctx, projectID, botID, id)
	if err != nil {
		return Source{}, err
	}
	if cur.Pending == "" {
		if cur, err = s.repo.Pend(ctx, cur.ID, "", newGen(), s.now()); err != nil {
			return Source{}, err
		}
	}
	s.enqueue(ctx, cur)
	return cur.public(), nil
}

// newGen names a new generation of a source's chunks.
func newGen() string { return ids.New() }

package agents

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/freeform"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/tools"
)

// Config is an agent's behaviour: the fields a version holds, the one list of what changes how
// the agent answers. Every change of one of them makes a new version; the other fields of an
// agent (its name, page, branding, rate limits, status, provider key) change in place.
type Config struct {
	Instruction            string   `json:"instruction" bson:"instruction"`
	Model                  string   `json:"model" bson:"model"`
	ReasoningType          string   `json:"reasoning_type" bson:"reasoning_type"`
	MaxReplyTokens         string   `json:"max_reply_tokens" bson:"max_reply_tokens"`
	Top                    int      `json:"top" bson:"top"`
	Memory                 int      `json:"memory" bson:"memory"`
	NoAnswerReply          string   `json:"no_answer_reply" bson:"no_answer_reply"`
	AutoApproveTools       int      `json:"auto_approve_tools" bson:"auto_approve_tools"`
	VisitorApprovals       bool     `json:"visitor_approvals" bson:"visitor_approvals"`
	HumanHandoff           bool     `json:"human_handoff" bson:"human_handoff"`
	HandoffMessage         string   `json:"handoff_message" bson:"handoff_message"`
	HandoffPhrases         []string `json:"handoff_phrases" bson:"handoff_phrases"`
	HandoffOnLowConfidence bool     `json:"handoff_on_low_confidence" bson:"handoff_on_low_confidence"`
	HandoffClassify        bool     `json:"handoff_classify" bson:"handoff_classify"`
	// Tools are the agent's own tools (nil in a version made before tools were recorded, whose
	// runs get the agent's tools as they are).
	Tools []tools.State `json:"tools" bson:"tools"`
	// Workflows are the agent's workflows (nil in a version made before workflows were
	// recorded, whose events trigger the agent's workflows as they are).
	Workflows []WorkflowState `json:"workflows" bson:"workflows"`
	// Sources names the set of the agent's memory sources the version answers from (those of
	// them not deleted since): nil in a version made before sets were recorded, which answers
	// from all the agent's sources.
	Sources *memory.SetRef `json:"sources" bson:"sources"`
}

// configFields are Config's fields by their JSON name, in order.
var configFields = func() []string {
	t := reflect.TypeFor[Config]()
	names := make([]string, t.NumField())
	for i := range names {
		names[i] = jsonName(t.Field(i))
	}
	return names
}()

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// ConfigOf is the agent's behaviour as its fields hold it.
func ConfigOf(b Bot) Config {
	return Config{Instruction: b.Instruction, Model: b.Model, ReasoningType: b.ReasoningType, MaxReplyTokens: b.MaxReplyTokens,
		Top: b.Top, Memory: b.Memory, NoAnswerReply: b.NoAnswerReply, AutoApproveTools: b.AutoApproveTools,
		VisitorApprovals: b.VisitorApprovals, HumanHandoff: b.HumanHandoff, HandoffMessage: b.HandoffMessage,
		HandoffPhrases: slices.Clone(b.HandoffPhrases), HandoffOnLowConfidence: b.HandoffOnLowConfidence, HandoffClassify: b.HandoffClassify,
		Tools: slices.Clone(b.Tools), Workflows: slices.Clone(b.Workflows), Sources: refCopy(b.Sources)}
}

// refCopy is a copy of r (nil for nil).
func refCopy(r *memory.SetRef) *memory.SetRef {
	if r == nil {
		return nil
	}
	c := *r
	return &c
}

// applyTo sets the agent's behaviour fields to c.
func (c Config) applyTo(b *Bot) {
	b.Instruction, b.Model, b.ReasoningType, b.MaxReplyTokens = c.Instruction, c.Model, c.ReasoningType, c.MaxReplyTokens
	b.Top, b.Memory, b.NoAnswerReply, b.AutoApproveTools = c.Top, c.Memory, c.NoAnswerReply, c.AutoApproveTools
	b.VisitorApprovals, b.HumanHandoff, b.HandoffMessage = c.VisitorApprovals, c.HumanHandoff, c.HandoffMessage
	b.HandoffPhrases = slices.Clone(c.HandoffPhrases)
	b.HandoffOnLowConfidence, b.HandoffClassify = c.HandoffOnLowConfidence, c.HandoffClassify
	b.Tools = slices.Clone(c.Tools)
	b.Workflows = slices.Clone(c.Workflows)
	b.Sources = refCopy(c.Sources)
}

// Change is a field that differs between two versions: its JSON name, its value in the older
// and in the newer. A tool's change is named "tools.<its name>" (a workflow's
// "workflows.<its name>"), its old or new value null when it was added or removed. The change
// of the set of memory sources is named "sources", its values the sets' references ({count,
// digest}), with the ids it added and removed.
type Change struct {
	Field string         `json:"field" bson:"field"`
	Old   freeform.Value `json:"old" bson:"old"`
	New   freeform.Value `json:"new" bson:"new"`
	// Added and Removed are the ids of the sources the newer set has and the older has not, and
	// the other way round, in order: at most MaxListedSources of each, AddedCount and
	// RemovedCount counting them all (none are listed when the older version recorded no set).
	Added        []string `json:"added,omitempty" bson:"added,omitempty"`
	Removed      []string `json:"removed,omitempty" bson:"removed,omitempty"`
	AddedCount   int      `json:"added_count,omitempty" bson:"added_count,omitempty"`
	RemovedCount int      `json:"removed_count,omitempty" bson:"removed_count,omitempty"`
}

// MaxListedSources bounds the ids of sources a change lists as added, and as removed.
const MaxListedSources = 100

// sourcesField is the name of the change of the set of memory sources.
const sourcesField = "sources"

// Diff lists the fields whose values differ from old to new, in Config's order (a tool's in
// the order of new's tools, then those removed; a workflow's likewise); none when they are the
// same. An absent list and an empty one are the same.
func Diff(old, new Config) []Change {
	changes := []Change{}
	ov, nv := reflect.ValueOf(old), reflect.ValueOf(new)
	for i, field := range configFields {
		o, n := ov.Field(i).Interface(), nv.Field(i).Interface()
		switch os := o.(type) {
		case []string:
			if ns := n.([]string); slices.Equal(os, ns) {
				continue
			}
			o, n = orNone(os), orNone(n.([]string))
		case []tools.State:
			changes = append(changes, toolChanges(os, n.([]tools.State))...)
			continue
		case []WorkflowState:
			changes = append(changes, workflowChanges(os, n.([]WorkflowState))...)
			continue
		case *memory.SetRef:
			if ns := n.(*memory.SetRef); os != ns && (os == nil || ns == nil || *os != *ns) {
				changes = append(changes, Change{Field: field, Old: refValue(os), New: refValue(ns)})
			}
			continue
		default:
			if o == n {
				continue
			}
		}
		changes = append(changes, Change{Field: field, Old: freeform.Value{V: o}, New: freeform.Value{V: n}})
	}
	return changes
}

// toolChanges are the tools that differ from old to new, named "tools.<its name>".
func toolChanges(old, new []tools.State) []Change {
	return setChanges("tools.", old, new, func(t tools.State) (string, string) { return t.ID, t.Name }, tools.State.Same)
}

// setChanges are the members of a set a version records (tools, workflows) that differ from old
// to new, by their ids: each added, changed or removed, named prefix and its name.
func setChanges[T any](prefix string, old, new []T, key func(T) (id, name string), same func(a, b T) bool) []Change {
	var changes []Change
	idOf := func(id string) func(T) bool { return func(t T) bool { k, _ := key(t); return k == id } }
	for _, n := range new {
		id, name := key(n)
		switch i := slices.IndexFunc(old, idOf(id)); {
		case i < 0:
			changes = append(changes, Change{Field: prefix + name, New: freeform.Value{V: n}})
		case !same(old[i], n):
			changes = append(changes, Change{Field: prefix + name, Old: freeform.Value{V: old[i]}, New: freeform.Value{V: n}})
		}
	}
	for _, o := range old {
		if id, name := key(o); !slices.ContainsFunc(new, idOf(id)) {
			changes = append(changes, Change{Field: prefix + name, Old: freeform.Value{V: o}})
		}
	}
	return changes
}

// refValue is r as a change's value: null for nil.
func refValue(r *memory.SetRef) freeform.Value {
	if r == nil {
		return freeform.Value{}
	}
	return freeform.Value{V: *r}
}

func orNone(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Version is an immutable, numbered configuration of an agent: Number 1 is the agent as
// created. Changes are the fields it changed from the version before it, By the key (or
// account) that made it.
type Version struct {
	BotID     string    `json:"-" bson:"bot_id"`
	ProjectID string    `json:"-" bson:"project_id"`
	Number    int       `json:"version" bson:"version"`
	Config    Config    `json:"config" bson:"config"`
	Changes   []Change  `json:"changes" bson:"changes"`
	By        string    `json:"by" bson:"by"`
	CreatedAt time.Time `json:"created_at" bson:"created_at"`
	// RollbackOf is the version a rollback restored (0 for other changes).
	RollbackOf int `json:"rollback_of,omitempty" bson:"rollback_of,omitempty"`
}

// clone is v sharing no slice with it.
func (v Version) clone() Version {
	v.Config = v.Config.clone()
	v.Changes = slices.Clone(v.Changes)
	return v
}

// clone is c sharing no slice with it.
func (c Config) clone() Config {
	c.HandoffPhrases = slices.Clone(c.HandoffPhrases)
	c.Tools = slices.Clone(c.Tools)
	c.Workflows = slices.Clone(c.Workflows)
	c.Sources = refCopy(c.Sources)
	return c
}

// VersionRepo persists versions. They are named by agent id and number; Keep is idempotent.
type VersionRepo interface {
	// Keep stores each of vs that is not stored yet; one stored already is left as it is.
	Keep(ctx context.Context, vs ...Version) error
	// Version returns the agent's version n: NotFound when there is none.
	Version(ctx context.Context, botID string, n int) (Version, error)
	// Versions returns one page of the agent's versions, newest first, and how many there are.
	Versions(ctx context.Context, botID string, page paging.Page) ([]Version, int, error)
}

// latest is the agent's newest version: the one it carries, or, for an agent stored before
// versions were, version 1 made of its fields as they are (the agent as created, as far as
// anyone can tell).
func (b Bot) latest() Version {
	if b.Latest != nil {
		return b.Latest.clone()
	}
	return Version{BotID: b.ID, ProjectID: b.ProjectID, Number: 1, Config: ConfigOf(b), Changes: []Change{}, CreatedAt: b.CreatedAt}
}

// Serving is the number of the version whose behaviour b carries: the published one, or the
// one At gave it.
func (b Bot) Serving() int {
	switch {
	case b.serving > 0:
		return b.serving
	case b.PublishedVersion > 0:
		return b.PublishedVersion
	}
	return 1
}

// versioned sets next's version fields after a change: a new version when its behaviour differs
// from cur's newest (or when force says so), published at once unless the agent is versioned
// (then next keeps cur's published behaviour, and the new version is its draft).
func versioned(cur Bot, next *Bot, by string, at time.Time, force bool) {
	latest := cur.latest()
	cfg := ConfigOf(*next)
	if changes := Diff(latest.Config, cfg); len(changes) > 0 || force {
		latest = Version{BotID: cur.ID, ProjectID: cur.ProjectID, Number: latest.Number + 1, Config: cfg, Changes: changes, By: by, CreatedAt: at}
	}
	next.Latest, next.Version = &latest, latest.Number
	if next.Versioning {
		ConfigOf(cur).applyTo(next)
		next.PublishedVersion = max(cur.PublishedVersion, 1)
		return
	}
	next.PublishedVersion = latest.Number
}

// stored is the agent's version n: its newest from the agent itself, others from the store.
func (s *Service) stored(ctx context.Context, b Bot, n int) (Version, error) {
	if latest := b.latest(); n == latest.Number {
		return latest, nil
	}
	if n < 1 || n > b.latest().Number {
		return Version{}, versionNotFound()
	}
	return s.versions.Version(ctx, b.ID, n)
}

// keep stores vs in the store of versions. A version is durable once its agent is written (it
// rides in the agent as Latest), so a failure here is not the change's: the next change of the
// agent keeps the version it replaces, and Versions keeps the newest when the store lacks it.
func (s *Service) keep(ctx context.Context, vs ...Version) {
	if len(vs) == 2 && vs[0].Number == vs[1].Number {
		vs = vs[1:]
	}
	_ = s.versions.Keep(ctx, vs...)
}

func versionNotFound() error { return apperr.NotFoundf("version") }

// Versions returns one page of the agent's versions, newest first, and how many there are.
func (s *Service) Versions(ctx context.Context, b Bot, page paging.Page) ([]Version, int, error) {
	list, total, err := s.versions.Versions(ctx, b.ID, page)
	if err != nil || total >= b.latest().Number {
		return list, total, err
	}
	if err := s.versions.Keep(ctx, b.latest()); err != nil {
		return nil, 0, err
	}
	return s.versions.Versions(ctx, b.ID, page)
}

// Version returns the agent's version n.
func (s *Service) Version(ctx context.Context, b Bot, n int) (Version, error) {
	return s.stored(ctx, b, n)
}

// VersionDiff is what changed from one version of an agent to another.
type VersionDiff struct {
	From    int      `json:"from"`
	To      int      `json:"to"`
	Changes []Change `json:"changes"`
}

// Diff returns the fields that differ from the agent's version from to its version to.
func (s *Service) Diff(ctx context.Context, b Bot, from, to int) (VersionDiff, error) {
	older, err := s.stored(ctx, b, from)
	if err != nil {
		return VersionDiff{}, err
	}
	newer, err := s.stored(ctx, b, to)
	if err != nil {
		return VersionDiff{}, err
	}
	changes := Diff(older.Config, newer.Config)
	return VersionDiff{From: from, To: to, Changes: changes}, s.listSourcesOf(ctx, b, changes, older.Config, newer.Config)
}

// Publish makes the agent's version n (its draft, the newest, when n is 0) the one end users
// get. An agent without versioning publishes every change at once, so only its newest version
// can be published (Conflict versioning_off: roll back instead).
func (s *Service) Publish(ctx context.Context, projectID, idOrUUID string, n int) (Bot, error) {
	return s.change(ctx, projectID, idOrUUID, func(cur, next *Bot) error {
		latest := cur.latest()
		n := cmp.Or(n, latest.Number)
		v, err := s.stored(ctx, *cur, n)
		if err != nil {
			return err
		}
		if !cur.Versioning && n != latest.Number {
			return apperr.New(apperr.Conflict, "versioning_off", fmt.Sprintf(
				"the agent publishes every change at once; set versioning to publish an earlier version, or roll back to version %d", n))
		}
		v.Config.applyTo(next)
		next.Latest, next.Version, next.PublishedVersion = &latest, latest.Number, n
		return nil
	})
}

// Rollback makes a new version of the agent, by by, with exactly the behaviour of its earlier
// version n, and publishes it: its own tools and its workflows are made again as version n had
// them, and its set of memory sources is version n's, less the sources deleted since (forgetting
// is not undone).
func (s *Service) Rollback(ctx context.Context, projectID, idOrUUID, by string, n int) (Bot, error) {
	return s.change(ctx, projectID, idOrUUID, func(cur, next *Bot) error {
		latest := cur.latest()
		if n >= latest.Number {
			return apperr.Invalidf("version", "must be an earlier version than the newest, %d", latest.Number)
		}
		v, err := s.stored(ctx, *cur, n)
		if err != nil {
			return err
		}
		if s.tools != nil && v.Config.Tools != nil {
			if err := s.tools.Restore(ctx, projectID, cur.ID, v.Config.Tools); err != nil {
				return err
			}
		}
		if s.flows != nil && v.Config.Workflows != nil {
			if err := s.flows.Restore(ctx, projectID, cur.ID, v.Config.Workflows); err != nil {
				return err
			}
		}
		v.Config = v.Config.clone()
		if err := s.restoredSources(ctx, *cur, &v.Config); err != nil {
			return err
		}
		rb := Version{BotID: cur.ID, ProjectID: cur.ProjectID, Number: latest.Number + 1, Config: v.Config.clone(),
			Changes: Diff(latest.Config, v.Config), By: by, CreatedAt: s.now(), RollbackOf: n}
		if err := s.listSourcesOf(ctx, *cur, rb.Changes, latest.Config, rb.Config); err != nil {
			return err
		}
		v.Config.applyTo(next)
		next.Latest, next.Version, next.PublishedVersion = &rb, rb.Number, rb.Number
		return nil
	})
}

// VersionName names a version of an agent in a request: its number, "draft" (the newest) or
// "published"; "" is the published one. JSON gives it as a string or a number.
type VersionName string

// UnmarshalJSON takes a string or an integer.
func (v *VersionName) UnmarshalJSON(b []byte) error {
	var n int
	if err := json.Unmarshal(b, &n); err == nil {
		*v = VersionName(strconv.Itoa(n))
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return &json.UnmarshalTypeError{Value: "non-string", Type: reflect.TypeFor[string]()}
	}
	*v = VersionName(s)
	return nil
}

// Number is the number of the agent's version name names: Invalid for a name that is none.
func (b Bot) Number(name VersionName) (int, error) {
	switch s := strings.ToLower(strings.TrimSpace(string(name))); s {
	case "", "published":
		return max(b.PublishedVersion, 1), nil
	case "draft":
		return b.latest().Number, nil
	default:
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return 0, apperr.Invalidf("version", "must be a version number, draft or published")
		}
		return n, nil
	}
}

// At is the agent with the behaviour of its version n, which it then serves (Serving): the agent
// itself for the version it serves. NotFound for a version it does not have.
func (s *Service) At(ctx context.Context, b Bot, n int) (Bot, error) {
	if n == b.Serving() {
		return b, nil
	}
	if c := b.Canary; c != nil && c.Config != nil && n == c.Version {
		return b.on(n, *c.Config), nil
	}
	v, err := s.stored(ctx, b, n)
	if err != nil {
		return Bot{}, err
	}
	return b.on(n, v.Config), nil
}

// ToolSets are agents' own tools as versions record and restore them (shared/tools implements
// it).
type ToolSets interface {
	// Set is the agent's tools as they are, each one's form kept under its revision.
	Set(ctx context.Context, projectID, botID string) ([]tools.State, error)
	// State is the agent's tool id as it is (false when there is none), its form kept under its
	// revision.
	State(ctx context.Context, projectID, botID, id string) (tools.State, bool, error)
	// Restore makes the agent's tools exactly those of set.
	Restore(ctx context.Context, projectID, botID string, set []tools.State) error
}

// ToolSet is the set of its own tools the agent's runs are held to: the tools of the version b
// carries, for a versioned agent (its published version keeps its tools while the draft's
// change) and for any agent at another version than its own (At, a canary); nil for an agent
// that publishes every change at once, at its newest version, whose runs get the tools as they
// are, each call reading its tool then (a tool turned off mid-run is no longer called).
func (b Bot) ToolSet() []tools.State {
	if b.Versioning || b.serving > 0 {
		return b.Tools
	}
	return nil
}

// UseTools has the versions of agents record their own tools from t, and rollbacks restore
// them.
func (s *Service) UseTools(t ToolSets) { s.tools = t }

// ToolChanged records the agent's tool toolID as it is, after a change of it by by (created,
// changed or deleted): a new version when it differs from the agent's newest version's,
// published at once unless the agent is versioned, as every change of its behaviour. A newest
// version that recorded no tools records the agent's whole set.
func (s *Service) ToolChanged(ctx context.Context, projectID, idOrUUID, by, toolID string) (Bot, error) {
	return s.memberChanged(ctx, projectID, idOrUUID, by, func(cur Bot, latest Config, next *Bot) (err error) {
		next.Tools, err = setAfter(latest.Tools, toolID, func(t tools.State) string { return t.ID },
			func() ([]tools.State, error) { return s.tools.Set(ctx, projectID, cur.ID) },
			func() (tools.State, bool, error) { return s.tools.State(ctx, projectID, cur.ID, toolID) })
		return err
	})
}

// memberChanged records a change of a member of a set the agent's versions hold (a tool, a
// workflow): next is the agent at its newest version's behaviour, whose set after sets; a new
// version when it differs, published at once unless the agent is versioned.
func (s *Service) memberChanged(ctx context.Context, projectID, idOrUUID, by string, after func(cur Bot, latest Config, next *Bot) error) (Bot, error) {
	return s.change(ctx, projectID, idOrUUID, func(cur, next *Bot) error {
		latest := cur.latest()
		latest.Config.applyTo(next)
		if err := after(*cur, latest.Config, next); err != nil {
			return err
		}
		versioned(*cur, next, by, s.now(), false)
		return nil
	})
}

// setAfter is set with its member id as one reads it now: replaced, added or removed (one's
// false: there is none). A set no version recorded (nil) is all of them as they are.
func setAfter[T any](set []T, id string, idOf func(T) string, all func() ([]T, error), one func() (T, bool, error)) ([]T, error) {
	if set == nil {
		return all()
	}
	st, ok, err := one()
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(set, func(t T) bool { return idOf(t) == id })
	switch {
	case !ok && i >= 0:
		return slices.Delete(slices.Clone(set), i, i+1), nil
	case !ok:
		return set, nil
	case i >= 0:
		set = slices.Clone(set)
		set[i] = st
		return set, nil
	}
	return append(slices.Clone(set), st), nil
}

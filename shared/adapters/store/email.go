package store

import (
	"context"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/email"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/outbox"
)

const (
	emailSettingsColl = "email_settings"
	emailsColl        = "emails"
)

// Emails stores agents' inbox settings and the emails they received and sent.
type Emails struct{ db *mongo.Database }

var _ email.Repo = Emails{}

// NewEmails returns the inboxes' repository of db.
func NewEmails(db *mongo.Database) Emails { return Emails{db: db} }

func (r Emails) settings() *mongo.Collection { return r.db.Collection(emailSettingsColl) }
func (r Emails) emails() *mongo.Collection   { return r.db.Collection(emailsColl) }

func (r Emails) Settings(ctx context.Context, botID string) (email.Settings, error) {
	var s email.Settings
	err := r.settings().FindOne(ctx, bson.D{{Key: "_id", Value: botID}}).Decode(&s)
	return s, wrap(err, email.SettingsResource)
}

func (r Emails) ByAddress(ctx context.Context, local string) (email.Settings, error) {
	var s email.Settings
	err := r.settings().FindOne(ctx, bson.D{{Key: "address", Value: local}}).Decode(&s)
	return s, wrap(err, email.SettingsResource)
}

func (r Emails) InsertSettings(ctx context.Context, s email.Settings) error {
	_, err := r.settings().InsertOne(ctx, s)
	return wrap(err, email.SettingsResource)
}

func (r Emails) ReplaceSettings(ctx context.Context, s email.Settings) error {
	res, err := r.settings().ReplaceOne(ctx, bson.D{{Key: "_id", Value: s.BotID}}, s)
	if err == nil && res.MatchedCount == 0 {
		return apperr.NotFoundf(email.SettingsResource)
	}
	return wrap(err, email.SettingsResource)
}

func (r Emails) DeleteSettings(ctx context.Context, botID string) error {
	_, err := r.settings().DeleteOne(ctx, bson.D{{Key: "_id", Value: botID}})
	return wrap(err, email.SettingsResource)
}

func (r Emails) Take(ctx context.Context, e email.Email, ev outbox.Event) (email.Email, bool, error) {
	var err error
	if ev.Type != "" {
		err = insertWithEvent(ctx, r.emails(), e, ev, email.Resource)
	} else {
		_, err = r.emails().InsertOne(ctx, e)
		err = wrap(err, email.Resource)
	}
	if apperr.As(err).Kind != apperr.Conflict {
		return e, err == nil, err
	}
	kept, err := r.Find(ctx, e.ID)
	return kept, false, err
}

func (r Emails) Find(ctx context.Context, id string) (email.Email, error) {
	var e email.Email
	err := r.emails().FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&e)
	return e, wrap(err, email.Resource)
}

func byEmail(projectID, botID, id string) bson.D {
	return bson.D{{Key: "_id", Value: id}, {Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID}}
}

func (r Emails) Get(ctx context.Context, projectID, botID, id string) (email.Email, error) {
	var e email.Email
	err := r.emails().FindOne(ctx, byEmail(projectID, botID, id)).Decode(&e)
	return e, wrap(err, email.Resource)
}

func (r Emails) List(ctx context.Context, projectID, botID string, page paging.Page) ([]email.Email, int, error) {
	list := []email.Email{}
	total, err := findPageSorted(ctx, r.emails(), bson.D{{Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID}},
		bson.D{{Key: "created_at", Value: -1}, {Key: "_id", Value: -1}}, page, &list)
	return list, total, wrap(err, email.Resource)
}

func (r Emails) Delete(ctx context.Context, projectID, botID, id string) error {
	res, err := r.emails().DeleteOne(ctx, byEmail(projectID, botID, id))
	if err == nil && res.DeletedCount == 0 {
		return apperr.NotFoundf(email.Resource)
	}
	return wrap(err, email.Resource)
}

func (r Emails) Set(ctx context.Context, e email.Email, ev outbox.Event) error {
	set := bson.D{{Key: "status", Value: e.Status}, {Key: "note", Value: e.Note}, {Key: "error", Value: e.Error},
		{Key: "attempts", Value: e.Attempts}, {Key: "chat_id", Value: e.ChatID}, {Key: "reply_id", Value: e.ReplyID},
		{Key: "by", Value: e.By}, {Key: "text", Value: e.TextBody}, {Key: "html", Value: e.HTMLBody},
		{Key: "answer_seconds", Value: e.AnswerSeconds}, {Key: "sent_at", Value: e.SentAt}, {Key: "updated_at", Value: e.UpdatedAt}}
	if ev.Type != "" {
		set = append(set, bson.E{Key: slot(ev.ID), Value: ev})
	}
	res, err := r.emails().UpdateOne(ctx, bson.D{{Key: "_id", Value: e.ID}}, bson.D{{Key: "$set", Value: set}})
	if err == nil && res.MatchedCount == 0 {
		return apperr.NotFoundf(email.Resource)
	}
	return wrap(err, email.Resource)
}

func (r Emails) ChatOf(ctx context.Context, botID string, messageIDs []string, threadKey string) (string, error) {
	ids := slices.DeleteFunc(slices.Clone(messageIDs), func(id string) bool { return id == "" })
	hasChat := bson.E{Key: "chat_id", Value: bson.D{{Key: "$gt", Value: ""}}}
	newest := options.FindOne().SetSort(bson.D{{Key: "created_at", Value: -1}}).SetProjection(bson.D{{Key: "chat_id", Value: 1}})
	var e email.Email
	if len(ids) > 0 {
		err := r.emails().FindOne(ctx, bson.D{{Key: "bot_id", Value: botID}, {Key: "message_id", Value: bson.D{{Key: "$in", Value: ids}}}, hasChat},
			newest).Decode(&e)
		if err == nil || !apperr.IsNotFound(wrap(err, email.Resource)) {
			return e.ChatID, wrap(err, email.Resource)
		}
	}
	err := r.emails().FindOne(ctx, bson.D{{Key: "bot_id", Value: botID}, {Key: "thread_key", Value: threadKey}, hasChat}, newest).Decode(&e)
	if err = wrap(err, email.Resource); apperr.IsNotFound(err) {
		return "", nil
	}
	return e.ChatID, err
}

func (r Emails) LatestOfChat(ctx context.Context, botID, chatID string) (email.Email, error) {
	var e email.Email
	err := r.emails().FindOne(ctx, bson.D{{Key: "chat_id", Value: chatID}, {Key: "bot_id", Value: botID}, {Key: "direction", Value: email.DirectionIn}},
		options.FindOne().SetSort(bson.D{{Key: "created_at", Value: -1}})).Decode(&e)
	return e, wrap(err, email.Resource)
}

func (r Emails) AnswersTo(ctx context.Context, botID, address string, since time.Time) (int, error) {
	n, err := r.emails().CountDocuments(ctx, bson.D{{Key: "bot_id", Value: botID}, {Key: "to_address", Value: address},
		{Key: "created_at", Value: bson.D{{Key: "$gte", Value: since}}}, {Key: "by", Value: email.ByAgent},
		{Key: "status", Value: bson.D{{Key: "$ne", Value: email.StatusDraft}}}})
	return int(n), wrap(err, email.Resource)
}

func (r Emails) Stats(ctx context.Context, projectID, botID string) (email.Stats, error) {
	var st email.Stats
	of := func(more ...bson.E) bson.D {
		return append(bson.D{{Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID}}, more...)
	}
	in, out := bson.E{Key: "direction", Value: email.DirectionIn}, bson.E{Key: "direction", Value: email.DirectionOut}
	counts := []struct {
		filter bson.D
		into   *int
	}{
		{of(in), &st.Received},
		{of(in, bson.E{Key: "status", Value: bson.D{{Key: "$in", Value: bson.A{email.StatusReceived, email.StatusDraft}}}}), &st.Unread},
		{of(out, bson.E{Key: "status", Value: email.StatusSent}, bson.E{Key: "by", Value: email.ByAgent}), &st.Automatic},
		{of(out, bson.E{Key: "status", Value: email.StatusSent}, bson.E{Key: "by", Value: email.ByPerson}), &st.ByPeople},
		{of(out, bson.E{Key: "status", Value: email.StatusFailed}), &st.Failed},
	}
	for _, c := range counts {
		n, err := r.emails().CountDocuments(ctx, c.filter)
		if err != nil {
			return st, wrap(err, email.Resource)
		}
		*c.into = int(n)
	}
	st.Replied = st.Automatic + st.ByPeople
	var last email.Email
	err := r.emails().FindOne(ctx, of(in), options.FindOne().SetSort(bson.D{{Key: "created_at", Value: -1}}).
		SetProjection(bson.D{{Key: "created_at", Value: 1}})).Decode(&last)
	if err = wrap(err, email.Resource); err == nil {
		st.LastReceivedAt = &last.CreatedAt
	} else if !apperr.IsNotFound(err) {
		return st, err
	}
	cur, err := r.emails().Find(ctx, of(out, bson.E{Key: "status", Value: email.StatusSent}),
		options.Find().SetSort(bson.D{{Key: "created_at", Value: -1}}).SetLimit(email.MedianOver).SetProjection(bson.D{{Key: "answer_seconds", Value: 1}}))
	if err != nil {
		return st, wrap(err, email.Resource)
	}
	var sent []email.Email
	if err := cur.All(ctx, &sent); err != nil {
		return st, wrap(err, email.Resource)
	}
	if n := len(sent); n > 0 {
		secs := make([]float64, n)
		for i, e := range sent {
			secs[i] = e.AnswerSeconds
		}
		slices.Sort(secs)
		median := secs[n/2]
		if n%2 == 0 {
			median = (secs[n/2-1] + secs[n/2]) / 2
		}
		st.MedianAnswerSeconds = &median
	}
	return st, nil
}

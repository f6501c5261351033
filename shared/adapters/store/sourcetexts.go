package store

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/agentplane/agentplane/shared/sources"
)

// A source's text longer than textApartBytes is kept apart from its record, in a document of
// sourceTextsColl of the source's _id, written once before the record and read back by every
// read of the source: the record, which ingestion and the outbox update several times, and its
// indexes no longer carry the text. A record whose `source` is empty has its text apart (a source
// is never created without one); records stored before texts were kept apart hold it inline and
// are read as they are. A crash between the two inserts leaves a text document no record points
// to: nothing reads it. Purging a deleted source removes its text.
const (
	sourceTextsColl = "source_texts"
	textApartBytes  = 16 << 10
)

type sourceText struct {
	ID   string `bson:"_id"`
	Text string `bson:"text"`
}

func (r Sources) texts() *mongo.Collection { return r.db.Collection(sourceTextsColl) }

// keepApart stores s's text apart when it is long, and returns s as its record is stored.
func (r Sources) keepApart(ctx context.Context, s sources.Source) (sources.Source, error) {
	if len(s.Source) <= textApartBytes {
		return s, nil
	}
	if _, err := r.texts().InsertOne(ctx, sourceText{ID: s.ID, Text: s.Source}); err != nil {
		return s, wrap(err, sources.Resource)
	}
	s.Source = ""
	return s, nil
}

// withTexts puts back the texts kept apart of the sources of list, in one read (by _id alone
// for one source: FerretDB pushes down only that filter).
func (r Sources) withTexts(ctx context.Context, list []sources.Source) error {
	var ids []string
	at := map[string]int{}
	for i, s := range list {
		if s.Source == "" && s.ID != "" {
			ids, at[s.ID] = append(ids, s.ID), i
		}
	}
	var found []sourceText
	switch len(ids) {
	case 0:
		return nil
	case 1:
		var t sourceText
		err := r.texts().FindOne(ctx, bson.D{{Key: "_id", Value: ids[0]}}).Decode(&t)
		if errors.Is(err, mongo.ErrNoDocuments) {
			return nil
		}
		if err != nil {
			return wrap(err, sources.Resource)
		}
		found = append(found, t)
	default:
		cur, err := r.texts().Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
		if err != nil {
			return wrap(err, sources.Resource)
		}
		if err := cur.All(ctx, &found); err != nil {
			return wrap(err, sources.Resource)
		}
	}
	for _, t := range found {
		list[at[t.ID]].Source = t.Text
	}
	return nil
}

// withText is withTexts of one source.
func (r Sources) withText(ctx context.Context, s sources.Source, err error) (sources.Source, error) {
	if err != nil {
		return s, err
	}
	list := []sources.Source{s}
	err = r.withTexts(ctx, list)
	return list[0], err
}

// dropText removes the text kept apart of source id, if any.
func (r Sources) dropText(ctx context.Context, id string) error {
	_, err := r.texts().DeleteOne(ctx, bson.D{{Key: "_id", Value: id}})
	return wrap(err, sources.Resource)
}

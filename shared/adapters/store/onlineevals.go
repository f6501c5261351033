package store

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/evals"
	"github.com/agentplane/agentplane/shared/stats"
)

const onlineGradesColl = "online_grades"

// onlineResource names online gradings in errors.
const onlineResource = "online_grade"

// OnlineGrades stores the gradings of agents' live answers, one document each under the
// answer's message id: a grading done twice is stored once.
type OnlineGrades struct{ db *mongo.Database }

var (
	_ evals.OnlineRepo = OnlineGrades{}
	_ stats.OnlineRepo = OnlineGrades{}
)

// NewOnlineGrades returns the online gradings' repository of db.
func NewOnlineGrades(db *mongo.Database) OnlineGrades { return OnlineGrades{db: db} }

func (r OnlineGrades) PutOnline(ctx context.Context, g evals.OnlineGrade) error {
	_, err := r.db.Collection(onlineGradesColl).ReplaceOne(ctx, bson.D{{Key: "_id", Value: g.MessageID}}, g, options.Replace().SetUpsert(true))
	return wrap(err, onlineResource)
}

// OnlineGradings reads the day, version and grades of each grading since the day (the embedded
// FerretDB's $unwind keeps no other field, so a $group cannot count the grades).
func (r OnlineGrades) OnlineGradings(ctx context.Context, projectID, botID, since string) ([]evals.OnlineGrade, error) {
	filter := append(byAgentOnly(projectID, botID), bson.E{Key: "day", Value: bson.D{{Key: "$gte", Value: since}}})
	cur, err := r.db.Collection(onlineGradesColl).Find(ctx, filter,
		options.Find().SetProjection(bson.D{{Key: "day", Value: 1}, {Key: "version", Value: 1}, {Key: "grades", Value: 1}}))
	if err != nil {
		return nil, wrap(err, onlineResource)
	}
	gradings := []evals.OnlineGrade{}
	return gradings, wrap(cur.All(ctx, &gradings), onlineResource)
}

// Gradings reads the agent's gradings of the days from from to to by the index of days, and
// gives each whose answer was written in [from, to) (gradings stored before they kept the
// answer's time are taken at the time they were graded).
func (r OnlineGrades) Gradings(ctx context.Context, projectID, botID string, from, to time.Time, each func(stats.Graded) error) error {
	filter := append(byAgentOnly(projectID, botID), bson.E{Key: "day", Value: bson.D{
		{Key: "$gte", Value: from.UTC().Format(time.DateOnly)}, {Key: "$lte", Value: to.UTC().Format(time.DateOnly)}}})
	cur, err := r.db.Collection(onlineGradesColl).Find(ctx, filter, options.Find().SetProjection(bson.D{
		{Key: "at", Value: 1}, {Key: "graded_at", Value: 1}, {Key: "version", Value: 1}, {Key: "grades", Value: 1}}))
	if err != nil {
		return wrap(err, onlineResource)
	}
	defer cur.Close(ctx)
	for cur.Next(ctx) {
		var g evals.OnlineGrade
		if err := cur.Decode(&g); err != nil {
			return wrap(err, onlineResource)
		}
		at := g.At
		if at.IsZero() {
			at = g.GradedAt
		}
		if at.Before(from) || !at.Before(to) {
			continue
		}
		passed := make(map[string]bool, len(g.Grades))
		for _, grade := range g.Grades {
			passed[grade.Grader] = grade.Pass
		}
		if err := each(stats.Graded{At: at, Version: g.Version, Passed: passed}); err != nil {
			return err
		}
	}
	return wrap(cur.Err(), onlineResource)
}

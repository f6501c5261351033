package store

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/workspaces"
)

const (
	workspacesColl     = "workspaces"
	workspaceFilesColl = "workspace_files"
	workspaceTrashColl = "workspace_trash"
)

// Workspaces stores agents' workspaces, one document each with its quota's counters, and their
// files, one document each with its versions, and their deleted files (their trash), one
// document each with its versions and its deletion.
type Workspaces struct{ db *mongo.Database }

var _ workspaces.Repo = Workspaces{}

// NewWorkspaces returns the workspace repository of db.
func NewWorkspaces(db *mongo.Database) Workspaces { return Workspaces{db: db} }

func (r Workspaces) coll() *mongo.Collection  { return r.db.Collection(workspacesColl) }
func (r Workspaces) files() *mongo.Collection { return r.db.Collection(workspaceFilesColl) }
func (r Workspaces) trash() *mongo.Collection { return r.db.Collection(workspaceTrashColl) }

func (r Workspaces) Insert(ctx context.Context, w workspaces.Workspace) error {
	_, err := r.coll().InsertOne(ctx, w)
	return wrap(err, workspaces.Resource)
}

func (r Workspaces) Get(ctx context.Context, projectID, botID, idOrUUID string) (workspaces.Workspace, error) {
	var w workspaces.Workspace
	err := r.coll().FindOne(ctx, bson.D{named(idOrUUID), {Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID}}).Decode(&w)
	return w, wrap(err, workspaces.Resource)
}

func (r Workspaces) List(ctx context.Context, projectID, botID string, page paging.Page) ([]workspaces.Workspace, int, error) {
	list := []workspaces.Workspace{}
	total, err := findPageSorted(ctx, r.coll(), bson.D{{Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID}},
		bson.D{{Key: "created_at", Value: 1}, {Key: "_id", Value: 1}}, page, &list)
	return list, total, wrap(err, workspaces.Resource)
}

func (r Workspaces) Count(ctx context.Context, projectID, botID string) (int, error) {
	n, err := r.coll().CountDocuments(ctx, bson.D{{Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID}})
	return int(n), wrap(err, workspaces.Resource)
}

func (r Workspaces) Grow(ctx context.Context, projectID, id string, files int, bytes int64, maxFiles int, maxBytes int64) (bool, error) {
	filter := bson.D{{Key: "_id", Value: id}, {Key: "project_id", Value: projectID}}
	if files > 0 {
		filter = append(filter, bson.E{Key: "files", Value: bson.D{{Key: "$lte", Value: maxFiles - files}}})
	}
	if bytes > 0 {
		filter = append(filter, bson.E{Key: "bytes", Value: bson.D{{Key: "$lte", Value: maxBytes - bytes}}})
	}
	res, err := r.coll().UpdateOne(ctx, filter, bson.D{
		{Key: "$inc", Value: bson.D{{Key: "files", Value: files}, {Key: "bytes", Value: bytes}}},
		{Key: "$set", Value: bson.D{{Key: "updated_at", Value: time.Now().UTC().Truncate(time.Millisecond)}}}})
	if err != nil {
		return false, wrap(err, workspaces.Resource)
	}
	if res.MatchedCount == 1 {
		return true, nil
	}
	n, err := r.coll().CountDocuments(ctx, bson.D{{Key: "_id", Value: id}, {Key: "project_id", Value: projectID}})
	if err != nil {
		return false, wrap(err, workspaces.Resource)
	}
	if n == 0 {
		return false, apperr.NotFoundf(workspaces.Resource)
	}
	return false, nil
}

// Delete removes the workspace first, so that it is gone at once, then its files and its trash.
func (r Workspaces) Delete(ctx context.Context, projectID, id string) error {
	res, err := r.coll().DeleteOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "project_id", Value: projectID}})
	if err != nil {
		return wrap(err, workspaces.Resource)
	}
	if res.DeletedCount == 0 {
		return apperr.NotFoundf(workspaces.Resource)
	}
	if _, err = r.files().DeleteMany(ctx, bson.D{{Key: "workspace_id", Value: id}, {Key: "project_id", Value: projectID}}); err != nil {
		return wrap(err, workspaces.FileResource)
	}
	_, err = r.trash().DeleteMany(ctx, bson.D{{Key: "workspace_id", Value: id}, {Key: "project_id", Value: projectID}})
	return wrap(err, workspaces.DeletedResource)
}

// SetSubdomain sets or, for "", unsets the workspace's subdomain: the sparse unique index of
// subdomains refuses one another workspace has.
func (r Workspaces) SetSubdomain(ctx context.Context, projectID, id, subdomain string, at *time.Time) error {
	now := time.Now().UTC().Truncate(time.Millisecond)
	update := bson.D{{Key: "$set", Value: bson.D{{Key: "subdomain", Value: subdomain}, {Key: "published_at", Value: at}, {Key: "updated_at", Value: now}}}}
	if subdomain == "" {
		update = bson.D{{Key: "$unset", Value: bson.D{{Key: "subdomain", Value: ""}, {Key: "published_at", Value: ""}}},
			{Key: "$set", Value: bson.D{{Key: "updated_at", Value: now}}}}
	}
	return r.update(ctx, projectID, id, update)
}

// update applies update to the project's workspace id.
func (r Workspaces) update(ctx context.Context, projectID, id string, update bson.D) error {
	res, err := r.coll().UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "project_id", Value: projectID}}, update)
	if err != nil {
		return wrap(err, workspaces.Resource)
	}
	if res.MatchedCount == 0 {
		return apperr.NotFoundf(workspaces.Resource)
	}
	return nil
}

func (r Workspaces) BySubdomain(ctx context.Context, subdomain string) (workspaces.Workspace, error) {
	return r.by(ctx, "subdomain", subdomain)
}

// by finds the workspace whose field key is value.
func (r Workspaces) by(ctx context.Context, key, value string) (workspaces.Workspace, error) {
	var w workspaces.Workspace
	err := r.coll().FindOne(ctx, bson.D{{Key: key, Value: value}}).Decode(&w)
	return w, wrap(err, workspaces.Resource)
}

// SetDomain sets or, for nil, unsets the workspace's domain; a verified domain of "" is unset
// (absent, which the sparse unique index of verified domains leaves out).
func (r Workspaces) SetDomain(ctx context.Context, projectID, id string, d *workspaces.Domain, verified string) error {
	set := bson.D{{Key: "updated_at", Value: time.Now().UTC().Truncate(time.Millisecond)}}
	unset := bson.D{}
	if d == nil {
		unset = append(unset, bson.E{Key: "domain", Value: ""})
	} else {
		set = append(set, bson.E{Key: "domain", Value: d})
	}
	if verified == "" {
		unset = append(unset, bson.E{Key: "verified_domain", Value: ""})
	} else {
		set = append(set, bson.E{Key: "verified_domain", Value: verified})
	}
	update := bson.D{{Key: "$set", Value: set}}
	if len(unset) > 0 {
		update = append(update, bson.E{Key: "$unset", Value: unset})
	}
	return r.update(ctx, projectID, id, update)
}

func (r Workspaces) ByDomain(ctx context.Context, host string) (workspaces.Workspace, error) {
	return r.by(ctx, "verified_domain", host)
}

// HasDomain reports whether a workspace has verified domain (agents.SiteDomains).
func (r Workspaces) HasDomain(ctx context.Context, domain string) (bool, error) {
	return r.has(ctx, "verified_domain", domain)
}

// HasSubdomain reports whether a workspace is published at subdomain (agents.SiteDomains).
func (r Workspaces) HasSubdomain(ctx context.Context, subdomain string) (bool, error) {
	return r.has(ctx, "subdomain", subdomain)
}

// has reports whether a workspace's field key is value.
func (r Workspaces) has(ctx context.Context, key, value string) (bool, error) {
	n, err := r.coll().CountDocuments(ctx, bson.D{{Key: key, Value: value}}, options.Count().SetLimit(1))
	return n > 0, wrap(err, workspaces.Resource)
}

func (r Workspaces) InsertFile(ctx context.Context, f workspaces.File) error {
	_, err := r.files().InsertOne(ctx, f)
	return wrap(err, workspaces.FileResource)
}

func (r Workspaces) File(ctx context.Context, projectID, workspaceID, idOrUUID string) (workspaces.File, error) {
	return r.fileBy(ctx, bson.D{named(idOrUUID), {Key: "workspace_id", Value: workspaceID}, {Key: "project_id", Value: projectID}})
}

func (r Workspaces) FileAt(ctx context.Context, projectID, workspaceID, p string) (workspaces.File, error) {
	return r.fileBy(ctx, bson.D{{Key: "workspace_id", Value: workspaceID}, {Key: "path", Value: p}, {Key: "project_id", Value: projectID}})
}

func (r Workspaces) fileBy(ctx context.Context, filter bson.D) (workspaces.File, error) {
	var f workspaces.File
	err := r.files().FindOne(ctx, filter).Decode(&f)
	return f, wrap(err, workspaces.FileResource)
}

func (r Workspaces) Files(ctx context.Context, projectID, workspaceID string) ([]workspaces.FileInfo, error) {
	cur, err := r.files().Find(ctx, bson.D{{Key: "workspace_id", Value: workspaceID}, {Key: "project_id", Value: projectID}},
		options.Find().SetSort(bson.D{{Key: "path", Value: 1}}).SetProjection(bson.D{{Key: "content", Value: 0}, {Key: "versions", Value: 0}}))
	if err != nil {
		return nil, wrap(err, workspaces.FileResource)
	}
	list := []workspaces.FileInfo{}
	return list, wrap(cur.All(ctx, &list), workspaces.FileResource)
}

func (r Workspaces) ReplaceFile(ctx context.Context, f workspaces.File) error {
	return replaceRevision(ctx, r.files(), f.ID, f.Rev, f, workspaces.FileResource)
}

// TrashFile writes the file to the trash first (over a copy a failed move left there), then
// removes it from the files: a process that dies between the two leaves the file live, with a
// copy in the trash, never lost.
func (r Workspaces) TrashFile(ctx context.Context, d workspaces.Deleted) error {
	_, err := r.trash().ReplaceOne(ctx, bson.D{{Key: "_id", Value: d.ID}, {Key: "project_id", Value: d.ProjectID}}, d, options.Replace().SetUpsert(true))
	if err != nil {
		return wrap(err, workspaces.DeletedResource)
	}
	file := bson.D{{Key: "_id", Value: d.ID}, {Key: "workspace_id", Value: d.WorkspaceID}, {Key: "project_id", Value: d.ProjectID}}
	res, err := r.files().DeleteOne(ctx, append(file, bson.E{Key: "rev", Value: d.Rev}))
	if err != nil {
		return wrap(err, workspaces.FileResource)
	}
	if res.DeletedCount == 1 {
		return nil
	}
	n, err := r.files().CountDocuments(ctx, file)
	switch {
	case err != nil:
		return wrap(err, workspaces.FileResource)
	case n == 0:
		return apperr.NotFoundf(workspaces.FileResource)
	}
	return apperr.New(apperr.Conflict, workspaces.FileResource+"_changed", "The file was changed by another request; read it and retry.")
}

func (r Workspaces) Trashed(ctx context.Context, projectID, workspaceID, idOrUUID string) (workspaces.Deleted, error) {
	var d workspaces.Deleted
	err := r.trash().FindOne(ctx, bson.D{named(idOrUUID), {Key: "workspace_id", Value: workspaceID}, {Key: "project_id", Value: projectID}}).Decode(&d)
	return d, wrap(err, workspaces.DeletedResource)
}

func (r Workspaces) Trash(ctx context.Context, projectID, workspaceID string, page paging.Page) ([]workspaces.DeletedInfo, int, error) {
	filter := bson.D{{Key: "workspace_id", Value: workspaceID}, {Key: "project_id", Value: projectID}}
	total, err := r.trash().CountDocuments(ctx, filter)
	if err != nil {
		return nil, 0, wrap(err, workspaces.DeletedResource)
	}
	cur, err := r.trash().Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "deleted_at", Value: -1}, {Key: "_id", Value: -1}}).
		SetSkip(page.Skip()).SetLimit(int64(page.PerPage)).SetProjection(bson.D{{Key: "content", Value: 0}, {Key: "versions", Value: 0}}))
	if err != nil {
		return nil, 0, wrap(err, workspaces.DeletedResource)
	}
	list := []workspaces.DeletedInfo{}
	return list, int(total), wrap(cur.All(ctx, &list), workspaces.DeletedResource)
}

func (r Workspaces) PruneTrash(ctx context.Context, projectID, workspaceID string, keep int) error {
	filter := bson.D{{Key: "workspace_id", Value: workspaceID}, {Key: "project_id", Value: projectID}}
	cur, err := r.trash().Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "deleted_at", Value: -1}, {Key: "_id", Value: -1}}).
		SetSkip(int64(keep)).SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return wrap(err, workspaces.DeletedResource)
	}
	var old []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(ctx, &old); err != nil || len(old) == 0 {
		return wrap(err, workspaces.DeletedResource)
	}
	ids := make([]string, len(old))
	for i, d := range old {
		ids[i] = d.ID
	}
	_, err = r.trash().DeleteMany(ctx, append(filter, bson.E{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}))
	return wrap(err, workspaces.DeletedResource)
}

func (r Workspaces) DropTrashed(ctx context.Context, projectID, workspaceID, id string) error {
	_, err := r.trash().DeleteOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "workspace_id", Value: workspaceID}, {Key: "project_id", Value: projectID}})
	return wrap(err, workspaces.DeletedResource)
}

func (r Workspaces) EachFile(ctx context.Context, projectID, workspaceID string, fn func(workspaces.File) error) error {
	cur, err := r.files().Find(ctx, bson.D{{Key: "workspace_id", Value: workspaceID}, {Key: "project_id", Value: projectID}},
		options.Find().SetSort(bson.D{{Key: "path", Value: 1}}).SetProjection(bson.D{{Key: "versions", Value: 0}}).SetBatchSize(8))
	if err != nil {
		return wrap(err, workspaces.FileResource)
	}
	defer cur.Close(context.WithoutCancel(ctx))
	for cur.Next(ctx) {
		var f workspaces.File
		if err := cur.Decode(&f); err != nil {
			return err
		}
		if err := fn(f); err != nil {
			return err
		}
	}
	return wrap(cur.Err(), workspaces.FileResource)
}

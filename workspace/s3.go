package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"syscall"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Config locates an S3-compatible bucket (LUCY_WORKSPACE_STORE and LUCY_S3_*).
type S3Config struct {
	Bucket string
	// Prefix is the key prefix of every workspace ("lucy" keeps files at lucy/<team>/<path>); empty
	// for the bucket's top level.
	Prefix string
	// Endpoint is the store's URL, e.g. "https://s3.eu-west-1.amazonaws.com", "http://minio:9000",
	// "https://<account>.r2.cloudflarestorage.com"; empty means AWS S3.
	Endpoint string
	Region   string
	// AccessKey and SecretKey (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, and AWS_SESSION_TOKEN for
	// temporary ones); empty means the machine's role (EC2/ECS/EKS instance metadata or web
	// identity), which minio-go's IAM provider finds.
	AccessKey, SecretKey, SessionToken string
	// Transport, when set, carries the requests (tests serve the store in process).
	Transport http.RoundTripper
}

// S3 is the store in an S3-compatible bucket: object keys <prefix>/<team>/<path>, one object per
// file. Folders are not objects: a folder exists while a file is in it, as in every S3 console.
// What a disk forbids and S3 would allow (a file "a" and a file "a/b" side by side) is refused here
// too, so that the tools behave the same on both stores.
type S3 struct {
	c      *minio.Client
	bucket string
	prefix string // "" or ending in "/"
}

// NewS3 connects to the bucket. It makes no request: a wrong bucket or key shows at the first use
// (Check makes one).
func NewS3(cfg S3Config) (*S3, error) {
	endpoint, secure := "s3.amazonaws.com", true
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return nil, fmt.Errorf("the S3 endpoint %q is not an http(s) URL without a path", cfg.Endpoint)
		}
		endpoint, secure = u.Host, u.Scheme == "https"
	}
	var creds *credentials.Credentials
	if cfg.AccessKey != "" {
		creds = credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, cfg.SessionToken)
	} else {
		creds = credentials.NewIAM("")
	}
	c, err := minio.New(endpoint, &minio.Options{
		Creds: creds, Secure: secure, Region: cfg.Region, Transport: cfg.Transport,
		// Lucy's tools retry at the activity level (bounded); the client's own retries would
		// multiply them.
		MaxRetries: 1,
	})
	if err != nil {
		return nil, fmt.Errorf("S3 client: %w", err)
	}
	prefix := strings.Trim(cfg.Prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	return &S3{c: c, bucket: cfg.Bucket, prefix: prefix}, nil
}

func (s *S3) String() string { return "s3://" + s.bucket + "/" + s.prefix }

// Check makes one request to see that the bucket exists and the credentials may list it, so that a
// worker with a wrong setting fails at start rather than at a person's first file.
func (s *S3) Check(ctx context.Context) error {
	ok, err := s.c.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("workspace store %s: %w", s, err)
	}
	if !ok {
		return fmt.Errorf("workspace store %s: the bucket %q does not exist: create it, or fix LUCY_WORKSPACE_STORE", s, s.bucket)
	}
	return nil
}

func (s *S3) teamPrefix(team string) string { return s.prefix + team + "/" }

func (s *S3) key(team, rel string) string { return s.teamPrefix(team) + rel }

// failed turns the store's error answers into the errors Store documents.
func (s *S3) failed(op, rel string, err error) error {
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.Code == minio.NoSuchKey || resp.StatusCode == http.StatusNotFound && resp.Code != minio.NoSuchBucket:
		return &fs.PathError{Op: op, Path: rel, Err: fs.ErrNotExist}
	case resp.Code == minio.PreconditionFailed || resp.StatusCode == http.StatusPreconditionFailed,
		// AWS answers 409 ConditionalRequestConflict to a conditional write racing another.
		resp.StatusCode == http.StatusConflict && resp.Code == "ConditionalRequestConflict":
		return fmt.Errorf("%s %s: %w", op, rel, ErrPrecondition)
	case resp.Code == minio.AccessDenied || resp.StatusCode == http.StatusForbidden:
		return &fs.PathError{Op: op, Path: rel, Err: fmt.Errorf("%w (workspace store %s: %s)", fs.ErrPermission, s, resp.Message)}
	case resp.Code == minio.NoSuchBucket:
		return fmt.Errorf("workspace store %s: the bucket %q does not exist", s, s.bucket)
	}
	return fmt.Errorf("workspace store %s: %s %s: %w", s, op, rel, err)
}

// isFolder reports whether some file lies under rel/.
func (s *S3) isFolder(ctx context.Context, team, rel string) (bool, error) {
	ctx, cancel := context.WithCancel(ctx) // stops the listing after the first key
	defer cancel()
	obj, any := <-s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.key(team, rel) + "/", Recursive: true, MaxKeys: 1})
	switch {
	case !any:
		return false, nil
	case obj.Err != nil:
		return false, s.failed("list", rel, obj.Err)
	}
	return true, nil
}

func objectInfo(rel string, o minio.ObjectInfo) Info {
	return Info{Path: rel, Size: o.Size, ModTime: o.LastModified, ETag: strings.Trim(o.ETag, `"`)}
}

func (s *S3) Stat(ctx context.Context, team, rel string) (Info, error) {
	if err := checkRel(team, rel, true); err != nil {
		return Info{}, err
	}
	if rel == "." {
		return Info{Path: ".", Dir: true}, nil
	}
	o, err := s.c.StatObject(ctx, s.bucket, s.key(team, rel), minio.StatObjectOptions{})
	if err == nil {
		return objectInfo(rel, o), nil
	}
	err = s.failed("stat", rel, err)
	if !errors.Is(err, fs.ErrNotExist) {
		return Info{}, err
	}
	if dir, lerr := s.isFolder(ctx, team, rel); lerr != nil {
		return Info{}, lerr
	} else if dir {
		return Info{Path: rel, Dir: true}, nil
	}
	return Info{}, err
}

func (s *S3) Read(ctx context.Context, team, rel string) ([]byte, Info, error) {
	if err := checkRel(team, rel, false); err != nil {
		return nil, Info{}, err
	}
	obj, err := s.c.GetObject(ctx, s.bucket, s.key(team, rel), minio.GetObjectOptions{})
	if err == nil {
		defer obj.Close()
		var data []byte
		data, err = io.ReadAll(obj)
		if err == nil {
			var o minio.ObjectInfo
			// The info of the response that carried these bytes: its ETag is theirs.
			if o, err = obj.Stat(); err == nil {
				return data, objectInfo(rel, o), nil
			}
		}
	}
	err = s.failed("read", rel, err)
	if errors.Is(err, fs.ErrNotExist) {
		if dir, lerr := s.isFolder(ctx, team, rel); lerr == nil && dir {
			return nil, Info{Path: rel, Dir: true}, &fs.PathError{Op: "read", Path: rel, Err: syscall.EISDIR}
		}
	}
	return nil, Info{}, err
}

func (s *S3) Write(ctx context.Context, team, rel string, data []byte, c Cond) (Info, error) {
	if err := checkRel(team, rel, false); err != nil {
		return Info{}, err
	}
	// A disk cannot hold a file where a folder is, nor a folder inside a file: neither may the
	// bucket, or the listings and reads of the two stores would differ. One listing and one HEAD
	// per parent folder; workspace paths are shallow.
	if dir, err := s.isFolder(ctx, team, rel); err != nil {
		return Info{}, err
	} else if dir {
		return Info{}, &fs.PathError{Op: "write", Path: rel, Err: syscall.EISDIR}
	}
	for p := path.Dir(rel); p != "."; p = path.Dir(p) {
		_, err := s.c.StatObject(ctx, s.bucket, s.key(team, p), minio.StatObjectOptions{})
		if err == nil {
			return Info{}, &fs.PathError{Op: "write", Path: rel, Err: syscall.ENOTDIR}
		}
		if err := s.failed("stat", p, err); !errors.Is(err, fs.ErrNotExist) {
			return Info{}, err
		}
	}
	opts := minio.PutObjectOptions{ContentType: "application/octet-stream"}
	if c.IfNoneMatch {
		opts.SetMatchETagExcept("*")
	}
	if c.IfMatch != "" {
		opts.SetMatchETag(c.IfMatch)
	}
	up, err := s.c.PutObject(ctx, s.bucket, s.key(team, rel), bytes.NewReader(data), int64(len(data)), opts)
	if err != nil {
		return Info{}, s.failed("write", rel, err)
	}
	return Info{Path: rel, Size: up.Size, ModTime: up.LastModified, ETag: strings.Trim(up.ETag, `"`)}, nil
}

func (s *S3) Delete(ctx context.Context, team, rel string) error {
	info, err := s.Stat(ctx, team, rel)
	if err != nil {
		return err
	}
	if info.Dir {
		return &fs.PathError{Op: "delete", Path: rel, Err: syscall.EISDIR}
	}
	if err := s.c.RemoveObject(ctx, s.bucket, s.key(team, rel), minio.RemoveObjectOptions{}); err != nil {
		return s.failed("delete", rel, err)
	}
	return nil
}

func (s *S3) List(ctx context.Context, team, dir string) ([]Info, error) {
	if err := checkRel(team, dir, true); err != nil {
		return nil, err
	}
	base := s.teamPrefix(team)
	prefix := base
	if dir != "." {
		prefix += dir + "/"
	}
	var out []Info
	for obj := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			return nil, s.failed("list", dir, obj.Err)
		}
		if strings.HasSuffix(obj.Key, "/") { // a folder marker some consoles create
			continue
		}
		out = append(out, objectInfo(strings.TrimPrefix(obj.Key, base), obj))
	}
	return out, nil // keys come in UTF-8 binary order, as strings.Compare sorts
}

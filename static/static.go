// Package static embeds the browser assets: the built Tailwind CSS, htmx
// and its WebSocket extension, and the site's own scripts.
package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
)

// FS holds the assets, served under /static/.
//
//go:embed css js img
var FS embed.FS

var versions = func() map[string]string {
	m := map[string]string{}
	_ = fs.WalkDir(FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := FS.ReadFile(path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		m[path] = hex.EncodeToString(sum[:6])
		return nil
	})
	return m
}()

// URL returns the address of an asset with its content hash as a version,
// so that it can be cached forever and still change on deploy.
func URL(name string) string { return "/static/" + name + "?v=" + versions[name] }

// Version returns the content hash of an asset ("" when there is none).
func Version(name string) string { return versions[name] }

// Package media sanitises user-uploaded profile images. Uploads are hostile
// input: they may lie about their type, hide metadata (GPS positions in EXIF,
// text chunks) or declare huge dimensions to exhaust memory when decoded. The
// only thing kept from an upload is its pixels, decoded and re-encoded by the
// standard library's encoders, so nothing the uploader put in the file
// besides the picture survives.
package media

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"strings"

	"golang.org/x/image/draw"
	"golang.org/x/image/webp"

	"wager/domain"
)

// Kind of profile image; it decides the largest size we store, so a client
// cannot make every page that shows the image download megabytes.
type Kind string

// Kinds of profile image and their bounding boxes.
const (
	Avatar Kind = "avatar" // at most 512x512 after processing
	Cover  Kind = "cover"  // at most 1500x500 after processing
)

// MaxUploadBytes bounds the upload before any parsing, so the cost of
// looking at a file is bounded by something the server chooses.
const MaxUploadBytes = 2 << 20 // 2 MiB

// Limits on declared dimensions, checked before decoding because a tiny
// compressed file can declare a picture whose pixels fill gigabytes. The
// pixel limit is lower than maxSide*maxSide so that a square at maxSide is
// refused too: 40 megapixels is already about 160 MB of RGBA.
const (
	maxSide   = 8000
	maxPixels = 40_000_000
)

// jpegQuality is high enough that re-encoding a photo shows no visible loss,
// and low enough that a 512x512 avatar stays well under 100 kB.
const jpegQuality = 85

// Image is a sanitised image: only pixels, re-encoded.
type Image struct {
	ContentType   string // "image/png" or "image/jpeg"
	Data          []byte
	Width, Height int
}

// format is what the leading bytes say the upload is. We never trust a file
// name or a client-declared Content-Type: both are chosen by the uploader.
type format struct {
	name         string
	decodeConfig func([]byte) (image.Config, error)
	decode       func([]byte) (image.Image, error)
	// jpegOut is true when the output should stay JPEG: photos compress
	// badly as PNG, while PNG and WebP inputs may carry transparency that
	// JPEG cannot hold.
	jpegOut bool
	// orientation reads, from the format's EXIF, how the stored picture
	// must be turned to be upright.
	orientation func([]byte) int
}

var (
	formatPNG = format{
		name:         "PNG",
		decodeConfig: func(b []byte) (image.Config, error) { return png.DecodeConfig(bytes.NewReader(b)) },
		decode:       func(b []byte) (image.Image, error) { return png.Decode(bytes.NewReader(b)) },
		orientation:  pngOrientation,
	}
	formatJPEG = format{
		name:         "JPEG",
		decodeConfig: func(b []byte) (image.Config, error) { return jpeg.DecodeConfig(bytes.NewReader(b)) },
		decode:       func(b []byte) (image.Image, error) { return jpeg.Decode(bytes.NewReader(b)) },
		jpegOut:      true,
		orientation:  jpegOrientation,
	}
	formatWebP = format{
		name:         "WebP",
		decodeConfig: func(b []byte) (image.Config, error) { return webp.DecodeConfig(bytes.NewReader(b)) },
		decode:       func(b []byte) (image.Image, error) { return webp.Decode(bytes.NewReader(b)) },
		orientation:  webpOrientation,
	}
)

// sniff recognises the three formats by their magic numbers. The decoders
// are called directly rather than through image.Decode so that a format
// registered elsewhere in the binary (GIF, BMP, ...) is not accepted here by
// accident.
func sniff(data []byte) (format, bool) {
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return formatPNG, true
	case bytes.HasPrefix(data, []byte("\xff\xd8\xff")):
		return formatJPEG, true
	case len(data) >= 12 && string(data[0:4]) == "RIFF" && string(data[8:12]) == "WEBP":
		return formatWebP, true
	}
	return format{}, false
}

// box returns the largest width and height stored for kind.
func box(kind Kind) (w, h int, ok bool) {
	switch kind {
	case Avatar:
		return 512, 512, true
	case Cover:
		return 1500, 500, true
	}
	return 0, 0, false
}

// Sanitize detects the format from the bytes (never from a file name): PNG,
// JPEG or WebP. It refuses anything else, files over MaxUploadBytes, images
// whose declared dimensions exceed 8000x8000 or 40 megapixels (checked
// before decoding, against decompression bombs), and undecodable data. It
// decodes, downscales (keeping the aspect ratio, never upscaling) to fit the
// Kind's box, turns the picture upright as its EXIF orientation says, and
// re-encodes: JPEG input becomes JPEG at quality 85; PNG and WebP input
// become PNG. The output therefore keeps no metadata (EXIF, text chunks,
// ICC, XMP).
//
// Errors are *domain.Error: PAYLOAD_TOO_LARGE for too many bytes, otherwise
// VALIDATION_ERROR naming the field "file" (or "kind" for an unknown Kind).
func Sanitize(data []byte, kind Kind) (Image, error) {
	maxW, maxH, ok := box(kind)
	if !ok {
		return Image{}, domain.Invalid(map[string]string{"kind": fmt.Sprintf("must be %q or %q, not %q", Avatar, Cover, kind)})
	}
	if len(data) == 0 {
		return Image{}, invalidFile("is empty; upload a PNG, JPEG or WebP image")
	}
	if len(data) > MaxUploadBytes {
		return Image{}, domain.Errorf(domain.CodePayloadTooLarge,
			"image is %s; at most %s", humanBytes(len(data)), humanBytes(MaxUploadBytes))
	}
	f, ok := sniff(data)
	if !ok {
		return Image{}, invalidFile("must be a PNG, JPEG or WebP image")
	}

	cfg, err := f.decodeConfig(data)
	if err != nil {
		return Image{}, invalidFile(fmt.Sprintf("is not a valid %s image (the file is damaged or incomplete)", f.name))
	}
	if err := checkDimensions(cfg.Width, cfg.Height); err != nil {
		return Image{}, err
	}

	src, err := f.decode(data)
	if err != nil {
		return Image{}, invalidFile(fmt.Sprintf("is not a valid %s image (the file is damaged or incomplete)", f.name))
	}
	// Trust the decoded bounds, not the header we checked: they should
	// agree, but the output must describe what we actually encode. A
	// picture stored on its side is fitted first (into the box turned the
	// same way) and turned upright after, so the turn only touches the
	// small result.
	o := f.orientation(data)
	if swapsAxes(o) {
		maxW, maxH = maxH, maxW
	}
	img := orient(fit(src, maxW, maxH), o)
	b := img.Bounds()

	var buf bytes.Buffer
	out := Image{Width: b.Dx(), Height: b.Dy()}
	if f.jpegOut {
		out.ContentType = "image/jpeg"
		err = jpeg.Encode(&buf, img, &jpeg.Options{Quality: jpegQuality})
	} else {
		out.ContentType = "image/png"
		enc := png.Encoder{CompressionLevel: png.BestCompression}
		err = enc.Encode(&buf, img)
	}
	if err != nil {
		// Encoding an in-memory image into a buffer only fails on a bug.
		return Image{}, fmt.Errorf("re-encode a %s image: %w", f.name, err)
	}
	out.Data = buf.Bytes()
	return out, nil
}

// checkDimensions refuses declared sizes that would cost too much memory to
// decode, before any pixel is allocated.
func checkDimensions(w, h int) error {
	switch {
	case w <= 0 || h <= 0:
		return invalidFile(fmt.Sprintf("image is %dx%d pixels; it must have at least one pixel", w, h))
	case w > maxSide || h > maxSide:
		return invalidFile(fmt.Sprintf("image is %dx%d pixels; at most %dx%d", w, h, maxSide, maxSide))
	case int64(w)*int64(h) > maxPixels:
		return invalidFile(fmt.Sprintf("image is %dx%d pixels (%.1f megapixels); at most %d megapixels",
			w, h, float64(w)*float64(h)/1e6, maxPixels/1_000_000))
	}
	return nil
}

// fit downscales src to fit in maxW x maxH keeping its aspect ratio. It
// never upscales: that would only make the file bigger and the picture
// blurrier.
func fit(src image.Image, maxW, maxH int) image.Image {
	sb := src.Bounds()
	w, h := fitSize(sb.Dx(), sb.Dy(), maxW, maxH)
	if w == sb.Dx() && h == sb.Dy() {
		return src
	}
	// RGBA is the destination x/image/draw has fast paths for, and both
	// encoders handle it without a generic per-pixel conversion.
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	// CatmullRom is the sharpest of x/image/draw's kernels and its cost is
	// linear in the source pixels, which MaxUploadBytes and maxPixels bound;
	// an 8000x5000 source takes well under a second.
	draw.CatmullRom.Scale(dst, dst.Bounds(), src, sb, draw.Src, nil)
	return dst
}

// fitSize returns the largest size with w:h's aspect ratio inside maxW x
// maxH, or w x h itself when that already fits. Integer arithmetic keeps
// results exact for the common cases (2000x1000 in 512x512 is 512x256).
func fitSize(w, h, maxW, maxH int) (int, int) {
	if w <= maxW && h <= maxH {
		return w, h
	}
	var nw, nh int
	if int64(w)*int64(maxH) >= int64(h)*int64(maxW) {
		// Width is the binding constraint.
		nw = maxW
		nh = int((int64(h)*int64(maxW) + int64(w)/2) / int64(w))
	} else {
		nh = maxH
		nw = int((int64(w)*int64(maxH) + int64(h)/2) / int64(h))
	}
	// A 1-pixel-high panorama must not round to an empty image.
	return max(nw, 1), max(nh, 1)
}

// invalidFile reports a problem with the uploaded file as a field error, so
// forms can show it next to the file input.
func invalidFile(reason string) *domain.Error {
	return domain.Invalid(map[string]string{"file": reason})
}

// humanBytes formats n for error messages: users think in KiB and MiB, not
// in byte counts.
func humanBytes(n int) string {
	switch {
	case n >= 1<<20:
		return trimZero(fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)))
	case n >= 1<<10:
		return trimZero(fmt.Sprintf("%.1f KiB", float64(n)/(1<<10)))
	}
	return fmt.Sprintf("%d bytes", n)
}

// trimZero turns "2.0 MiB" into "2 MiB": the limit is a round number and
// should read like one.
func trimZero(s string) string {
	return strings.Replace(s, ".0 ", " ", 1)
}

package media

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"runtime"
	"strings"
	"testing"

	"wager/domain"
)

// webp4x2 is a lossless (VP8L) 4x2 WebP made with
// `cwebp -lossless -exact -metadata none` from webp4x2Colors. x/image has
// no WebP encoder, so the fixture has to be embedded.
const webp4x2 = "UklGRjwAAABXRUJQVlA4TDAAAAAvA0AAAD9AkG3To90fahoCgqLrliPItulR7g+5+Q8kgTFD8g5CATRG1U8lhSL6H+Q="

// webp4x2Colors are the fixture's pixels, row by row.
var webp4x2Colors = []color.NRGBA{
	{255, 0, 0, 255}, {0, 255, 0, 255}, {0, 0, 255, 255}, {255, 255, 255, 255},
	{0, 0, 0, 255}, {255, 255, 0, 255}, {0, 255, 255, 255}, {128, 64, 32, 255},
}

func webpFixture(t *testing.T) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(webp4x2)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// blocks returns a w x h picture of 100-pixel colour blocks: distinct
// enough to check pixels, and compressible enough that a 3000x3000 PNG
// stays under MaxUploadBytes.
func blocks(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			bx, by := x/100, y/100
			img.SetNRGBA(x, y, color.NRGBA{uint8(bx * 40), uint8(by * 40), uint8((bx + by) * 20), 255})
		}
	}
	return img
}

// noise returns an incompressible picture, so that cutting its encoding in
// half cuts through pixel data rather than trailing chunks.
func noise(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	s := uint32(1)
	for i := range img.Pix {
		s = s*1664525 + 1013904223
		img.Pix[i] = uint8(s >> 24)
	}
	return img
}

func encodePNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func encodeJPEG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// pngChunk builds a chunk with its CRC, which Go's decoder verifies even
// for ancillary chunks it skips.
func pngChunk(typ string, data []byte) []byte {
	var b []byte
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	b = append(b, typ...)
	b = append(b, data...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b[4:]))
}

// insertAfterIHDR puts chunk where PNG metadata usually sits: right after
// the 8-byte signature and the 25-byte IHDR chunk.
func insertAfterIHDR(p, chunk []byte) []byte {
	const end = 8 + 25
	return append(append(append([]byte{}, p[:end]...), chunk...), p[end:]...)
}

// pngHeader is a PNG that stops after IHDR: enough for DecodeConfig to read
// the declared size, with no pixels behind it.
func pngHeader(w, h uint32) []byte {
	ihdr := binary.BigEndian.AppendUint32(nil, w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 6, 0, 0, 0) // 8-bit RGBA, no interlace
	b := append([]byte("\x89PNG\r\n\x1a\n"), pngChunk("IHDR", ihdr)...)
	return append(b, pngChunk("IEND", nil)...)
}

// pngChunkTypes lists the chunks of an encoded PNG in order.
func pngChunkTypes(t *testing.T, p []byte) []string {
	t.Helper()
	var types []string
	for i := 8; i+8 <= len(p); {
		n := int(binary.BigEndian.Uint32(p[i:]))
		types = append(types, string(p[i+4:i+8]))
		i += 12 + n
	}
	return types
}

// jpegWithAPP1 inserts an APP1 segment right after SOI, where cameras put
// EXIF.
func jpegWithAPP1(j []byte, payload string) []byte {
	seg := []byte{0xFF, 0xE1}
	seg = binary.BigEndian.AppendUint16(seg, uint16(2+len(payload)))
	seg = append(seg, payload...)
	return append(append(append([]byte{}, j[:2]...), seg...), j[2:]...)
}

// jpegWithSize rewrites the declared size in the SOF segment, walking the
// segments rather than searching bytes so table data cannot be mistaken for
// a marker.
func jpegWithSize(t *testing.T, j []byte, w, h uint16) []byte {
	t.Helper()
	j = append([]byte{}, j...)
	for i := 2; i+4 <= len(j); {
		if j[i] != 0xFF {
			t.Fatalf("no marker at offset %d", i)
		}
		marker := j[i+1]
		n := int(binary.BigEndian.Uint16(j[i+2:]))
		if marker == 0xC0 || marker == 0xC2 {
			binary.BigEndian.PutUint16(j[i+5:], h)
			binary.BigEndian.PutUint16(j[i+7:], w)
			return j
		}
		i += 2 + n
	}
	t.Fatal("no SOF segment")
	return nil
}

// webpWithSize rewrites the VP8L header's 14-bit width-1 and height-1.
func webpWithSize(t *testing.T, w, h uint32) []byte {
	t.Helper()
	b := webpFixture(t)
	const hdr = 12 + 8 // RIFF header, VP8L chunk header
	if string(b[12:16]) != "VP8L" || b[hdr] != 0x2f {
		t.Fatal("fixture is not a simple VP8L WebP")
	}
	bits := binary.LittleEndian.Uint32(b[hdr+1:])
	bits = bits&^(1<<28-1) | (w - 1) | (h-1)<<14
	binary.LittleEndian.PutUint32(b[hdr+1:], bits)
	return b
}

// domainError returns the *domain.Error in err, failing the test if there
// is none.
func domainError(t *testing.T, err error) *domain.Error {
	t.Helper()
	var de *domain.Error
	if !errors.As(err, &de) {
		t.Fatalf("error: want *domain.Error, got %T (%v)", err, err)
	}
	return de
}

func TestSanitizeRejects(t *testing.T) {
	valid := encodePNG(t, blocks(10, 10))
	tooBig := append(append([]byte{}, valid...), make([]byte, 3<<20)...)
	truncated := encodePNG(t, noise(64, 64))
	truncated = truncated[:len(truncated)/2]
	truncatedJPEG := encodeJPEG(t, noise(64, 64))
	truncatedJPEG = truncatedJPEG[:len(truncatedJPEG)/2]

	tests := []struct {
		name       string
		data       []byte
		kind       Kind
		wantCode   string
		wantField  string // "" when the error has no fields
		wantReason string // substring of the field's reason or of the message
	}{
		{"plain text", []byte("hello, I am not an image"), Avatar, domain.CodeValidation, "file", "must be a PNG, JPEG or WebP image"},
		{"GIF is not accepted", []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"), Avatar, domain.CodeValidation, "file", "must be a PNG, JPEG or WebP image"},
		{"empty", nil, Avatar, domain.CodeValidation, "file", "empty"},
		{"over MaxUploadBytes", tooBig, Avatar, domain.CodePayloadTooLarge, "", "at most 2 MiB"},
		{"truncated PNG", truncated, Avatar, domain.CodeValidation, "file", "not a valid PNG image"},
		{"truncated JPEG", truncatedJPEG, Avatar, domain.CodeValidation, "file", "not a valid JPEG image"},
		{"PNG signature only", []byte("\x89PNG\r\n\x1a\n"), Avatar, domain.CodeValidation, "file", "not a valid PNG image"},
		{"WebP header only", []byte("RIFF\x04\x00\x00\x00WEBP"), Avatar, domain.CodeValidation, "file", "not a valid WebP image"},
		{"PNG declaring 9000x9000", pngHeader(9000, 9000), Avatar, domain.CodeValidation, "file", "image is 9000x9000 pixels; at most 8000x8000"},
		{"PNG declaring 7000x7000 (49 MP)", pngHeader(7000, 7000), Avatar, domain.CodeValidation, "file", "at most 40 megapixels"},
		{"unknown kind", valid, Kind("banner"), domain.CodeValidation, "kind", `must be "avatar" or "cover"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			img, err := Sanitize(tc.data, tc.kind)
			if err == nil {
				t.Fatalf("Sanitize: want %s error, got success (%s %dx%d)", tc.wantCode, img.ContentType, img.Width, img.Height)
			}
			de := domainError(t, err)
			if de.Code != tc.wantCode {
				t.Errorf("code: want %s, got %s (%v)", tc.wantCode, de.Code, de)
			}
			got := de.Message
			if tc.wantField != "" {
				reason, ok := de.Fields[tc.wantField]
				if !ok {
					t.Fatalf("fields: want %q, got %v", tc.wantField, de.Fields)
				}
				got = reason
			}
			if !strings.Contains(got, tc.wantReason) {
				t.Errorf("reason: want it to contain %q, got %q", tc.wantReason, got)
			}
		})
	}
}

// TestSanitizeRefusesBombsBeforeDecoding checks that huge declared sizes are
// refused from the header alone: decoding 20000x20000 RGBA would allocate
// 1.6 GB.
func TestSanitizeRefusesBombsBeforeDecoding(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		{"PNG 20000x20000", pngHeader(20000, 20000)},
		{"JPEG 20000x20000", jpegWithSize(t, encodeJPEG(t, blocks(16, 16)), 20000, 20000)},
		{"WebP 16384x16384", webpWithSize(t, 16384, 16384)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := Sanitize(tc.data, Avatar)
			runtime.ReadMemStats(&after)

			de := domainError(t, err)
			if de.Code != domain.CodeValidation || de.Fields["file"] == "" {
				t.Errorf("error: want %s with a file field, got %s %v", domain.CodeValidation, de.Code, de.Fields)
			}
			if !strings.Contains(de.Fields["file"], "at most 8000x8000") {
				t.Errorf("reason: want it to mention the 8000x8000 limit, got %q", de.Fields["file"])
			}
			const maxAlloc = 1 << 20
			if got := after.TotalAlloc - before.TotalAlloc; got > maxAlloc {
				t.Errorf("allocated: want at most %d bytes, got %d", maxAlloc, got)
			}
		})
	}
}

func TestSanitizeSizes(t *testing.T) {
	tests := []struct {
		name         string
		data         []byte
		kind         Kind
		wantType     string
		wantW, wantH int
	}{
		{"2000x1000 avatar is downscaled to 512x256", encodePNG(t, blocks(2000, 1000)), Avatar, "image/png", 512, 256},
		{"100x100 avatar is not upscaled", encodePNG(t, blocks(100, 100)), Avatar, "image/png", 100, 100},
		{"3000x3000 cover becomes 500x500", encodePNG(t, blocks(3000, 3000)), Cover, "image/png", 500, 500},
		{"2000x1000 JPEG cover becomes 1000x500 JPEG", encodeJPEG(t, blocks(2000, 1000)), Cover, "image/jpeg", 1000, 500},
		{"1500x500 cover fits exactly", encodePNG(t, blocks(1500, 500)), Cover, "image/png", 1500, 500},
		{"PNG named photo.jpg is still a PNG (no name is used)", encodePNG(t, blocks(20, 10)), Avatar, "image/png", 20, 10},
		{"JPEG named avatar.png is still a JPEG (no name is used)", encodeJPEG(t, blocks(20, 10)), Avatar, "image/jpeg", 20, 10},
		{"WebP comes out as PNG", webpFixture(t), Avatar, "image/png", 4, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			img, err := Sanitize(tc.data, tc.kind)
			if err != nil {
				t.Fatalf("Sanitize: want success, got %v", err)
			}
			if img.ContentType != tc.wantType || img.Width != tc.wantW || img.Height != tc.wantH {
				t.Errorf("result: want %s %dx%d, got %s %dx%d", tc.wantType, tc.wantW, tc.wantH, img.ContentType, img.Width, img.Height)
			}
			cfg, format, err := image.DecodeConfig(bytes.NewReader(img.Data))
			if err != nil {
				t.Fatalf("decoding output: %v", err)
			}
			if wantFormat := strings.TrimPrefix(tc.wantType, "image/"); format != wantFormat || cfg.Width != tc.wantW || cfg.Height != tc.wantH {
				t.Errorf("output bytes: want %s %dx%d, got %s %dx%d", wantFormat, tc.wantW, tc.wantH, format, cfg.Width, cfg.Height)
			}
		})
	}
}

func TestSanitizeStripsPNGMetadata(t *testing.T) {
	src := blocks(300, 200)
	data := encodePNG(t, src)
	data = insertAfterIHDR(data, pngChunk("tEXt", []byte("Comment\x00secret-gps-location")))
	data = insertAfterIHDR(data, pngChunk("eXIf", []byte("MM\x00\x2asecret-exif-marker")))
	if _, err := png.Decode(bytes.NewReader(data)); err != nil {
		t.Fatalf("fixture: want a valid PNG, got %v", err)
	}

	img, err := Sanitize(data, Cover)
	if err != nil {
		t.Fatalf("Sanitize: want success, got %v", err)
	}
	if img.ContentType != "image/png" {
		t.Errorf("content type: want image/png, got %s", img.ContentType)
	}
	for _, secret := range []string{"secret-gps-location", "secret-exif-marker"} {
		if bytes.Contains(img.Data, []byte(secret)) {
			t.Errorf("output: want no %q, got it", secret)
		}
	}
	for _, typ := range pngChunkTypes(t, img.Data) {
		switch typ {
		case "tEXt", "iTXt", "zTXt", "eXIf", "iCCP":
			t.Errorf("chunks: want no %s, got %v", typ, pngChunkTypes(t, img.Data))
		}
	}

	out, err := png.Decode(bytes.NewReader(img.Data))
	if err != nil {
		t.Fatalf("decoding output: %v", err)
	}
	for _, p := range []image.Point{{0, 0}, {150, 50}, {299, 199}, {120, 180}} {
		want := color.NRGBAModel.Convert(src.At(p.X, p.Y))
		got := color.NRGBAModel.Convert(out.At(p.X, p.Y))
		if want != got {
			t.Errorf("pixel %v: want %v, got %v", p, want, got)
		}
	}
}

func TestSanitizeStripsJPEGMetadata(t *testing.T) {
	src := blocks(200, 200)
	data := jpegWithAPP1(encodeJPEG(t, src), "Exif\x00\x00MM\x00\x2asecret-camera-serial")
	if _, err := jpeg.Decode(bytes.NewReader(data)); err != nil {
		t.Fatalf("fixture: want a valid JPEG, got %v", err)
	}

	img, err := Sanitize(data, Avatar)
	if err != nil {
		t.Fatalf("Sanitize: want success, got %v", err)
	}
	if img.ContentType != "image/jpeg" {
		t.Errorf("content type: want image/jpeg, got %s", img.ContentType)
	}
	for _, s := range []string{"secret-camera-serial", "Exif"} {
		if bytes.Contains(img.Data, []byte(s)) {
			t.Errorf("output: want no %q, got it", s)
		}
	}
	out, err := jpeg.Decode(bytes.NewReader(img.Data))
	if err != nil {
		t.Fatalf("decoding output: %v", err)
	}
	// JPEG is lossy twice over here, so compare block centres loosely.
	for _, p := range []image.Point{{50, 50}, {150, 50}, {50, 150}, {150, 150}} {
		want := color.NRGBAModel.Convert(src.At(p.X, p.Y)).(color.NRGBA)
		got := color.NRGBAModel.Convert(out.At(p.X, p.Y)).(color.NRGBA)
		if diff(want.R, got.R) > 8 || diff(want.G, got.G) > 8 || diff(want.B, got.B) > 8 {
			t.Errorf("pixel %v: want about %v, got %v", p, want, got)
		}
	}
}

func diff(a, b uint8) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}

func TestSanitizeWebP(t *testing.T) {
	img, err := Sanitize(webpFixture(t), Avatar)
	if err != nil {
		t.Fatalf("Sanitize: want success, got %v", err)
	}
	if img.ContentType != "image/png" {
		t.Errorf("content type: want image/png, got %s", img.ContentType)
	}
	out, err := png.Decode(bytes.NewReader(img.Data))
	if err != nil {
		t.Fatalf("decoding output as PNG: %v", err)
	}
	for i, want := range webp4x2Colors {
		x, y := i%4, i/4
		if got := color.NRGBAModel.Convert(out.At(x, y)); got != want {
			t.Errorf("pixel (%d,%d): want %v, got %v", x, y, want, got)
		}
	}
}

func TestFitSize(t *testing.T) {
	tests := []struct {
		name             string
		w, h, maxW, maxH int
		wantW, wantH     int
	}{
		{"fits", 100, 100, 512, 512, 100, 100},
		{"wide", 2000, 1000, 512, 512, 512, 256},
		{"tall", 1000, 2000, 512, 512, 256, 512},
		{"square into cover", 3000, 3000, 1500, 500, 500, 500},
		{"panorama into cover", 6000, 1000, 1500, 500, 1500, 250},
		{"one pixel high does not vanish", 8000, 1, 512, 512, 512, 1},
		{"rounds to nearest", 1000, 333, 512, 512, 512, 170},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, h := fitSize(tc.w, tc.h, tc.maxW, tc.maxH)
			if w != tc.wantW || h != tc.wantH {
				t.Errorf("fitSize(%d, %d, %d, %d): want %dx%d, got %dx%d", tc.w, tc.h, tc.maxW, tc.maxH, tc.wantW, tc.wantH, w, h)
			}
		})
	}
}

// BenchmarkSanitizeLargestAllowed measures the choice of CatmullRom on a
// maximal source (40 megapixels), which must still be processed in
// interactive time: about 2 s on the 2-core development machine.
func BenchmarkSanitizeLargestAllowed(b *testing.B) {
	data := encodePNG(b, blocks(8000, 5000))
	if len(data) > MaxUploadBytes {
		b.Fatalf("fixture: want at most %d bytes, got %d", MaxUploadBytes, len(data))
	}
	for b.Loop() {
		img, err := Sanitize(data, Cover)
		if err != nil {
			b.Fatalf("Sanitize: want success, got %v", err)
		}
		if img.Width != 800 || img.Height != 500 {
			b.Fatalf("size: want 800x500, got %dx%d", img.Width, img.Height)
		}
	}
}

// exifOrientation is an APP1 payload whose IFD0 holds only the Orientation
// tag, in the given byte order.
func exifOrientation(order binary.AppendByteOrder, o uint16) string {
	b := []byte("Exif\x00\x00")
	if order == binary.LittleEndian {
		b = append(b, "II"...)
	} else {
		b = append(b, "MM"...)
	}
	b = order.AppendUint16(b, 42)
	b = order.AppendUint32(b, 8)      // IFD0 right after the header
	b = order.AppendUint16(b, 1)      // one entry
	b = order.AppendUint16(b, 0x0112) // Orientation
	b = order.AppendUint16(b, 3)      // SHORT
	b = order.AppendUint32(b, 1)
	b = order.AppendUint16(b, o)
	b = order.AppendUint16(b, 0)
	b = order.AppendUint32(b, 0) // no next IFD
	return string(b)
}

// quadrants is a 40x20 picture: red, green on top; blue, white below.
func quadrants() *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, 40, 20))
	for y := range 20 {
		for x := range 40 {
			img.SetNRGBA(x, y, quadrantColors[y/10*2+x/20])
		}
	}
	return img
}

var quadrantColors = []color.NRGBA{{255, 0, 0, 255}, {0, 255, 0, 255}, {0, 0, 255, 255}, {255, 255, 255, 255}}

const red, green, blue, white = 0, 1, 2, 3

func TestSanitizeTurnsPhotosUpright(t *testing.T) {
	// What the upright picture shows in its top-left, top-right,
	// bottom-left and bottom-right quarters, for each EXIF orientation of
	// the stored quadrants picture.
	cases := []struct {
		orientation uint16
		w, h        int
		quarters    [4]int
	}{
		{1, 40, 20, [4]int{red, green, blue, white}},
		{2, 40, 20, [4]int{green, red, white, blue}},
		{3, 40, 20, [4]int{white, blue, green, red}},
		{4, 40, 20, [4]int{blue, white, red, green}},
		{5, 20, 40, [4]int{red, blue, green, white}},
		{6, 20, 40, [4]int{blue, red, white, green}},
		{7, 20, 40, [4]int{white, green, blue, red}},
		{8, 20, 40, [4]int{green, white, red, blue}},
	}
	plain := encodeJPEG(t, quadrants())
	for _, order := range []binary.AppendByteOrder{binary.BigEndian, binary.LittleEndian} {
		for _, tc := range cases {
			img, err := Sanitize(jpegWithAPP1(plain, exifOrientation(order, tc.orientation)), Avatar)
			if err != nil {
				t.Fatalf("orientation %d (%v): %v", tc.orientation, order, err)
			}
			out, err := jpeg.Decode(bytes.NewReader(img.Data))
			if err != nil {
				t.Fatal(err)
			}
			if b := out.Bounds(); b.Dx() != tc.w || b.Dy() != tc.h || img.Width != tc.w || img.Height != tc.h {
				t.Errorf("orientation %d (%v): size %v (reported %dx%d), want %dx%d",
					tc.orientation, order, b.Size(), img.Width, img.Height, tc.w, tc.h)
				continue
			}
			for i, p := range []image.Point{{tc.w / 4, tc.h / 4}, {3 * tc.w / 4, tc.h / 4}, {tc.w / 4, 3 * tc.h / 4}, {3 * tc.w / 4, 3 * tc.h / 4}} {
				want := quadrantColors[tc.quarters[i]]
				got := color.NRGBAModel.Convert(out.At(p.X, p.Y)).(color.NRGBA)
				if diff(want.R, got.R) > 40 || diff(want.G, got.G) > 40 || diff(want.B, got.B) > 40 {
					t.Errorf("orientation %d (%v): pixel %v is %v, want about %v", tc.orientation, order, p, got, want)
				}
			}
			if bytes.Contains(img.Data, []byte("Exif")) {
				t.Errorf("orientation %d: the output still has EXIF", tc.orientation)
			}
		}
	}
}

// TestSanitizeTurnsPNGAndWebPUpright: PNG (eXIf chunk) and WebP (EXIF
// chunk of an extended WebP) carry the same orientation tag as JPEG.
func TestSanitizeTurnsPNGAndWebPUpright(t *testing.T) {
	exif := exifOrientation(binary.LittleEndian, 6)[6:] // the TIFF data alone
	// PNG: the quadrants stored on their side; turned 90 degrees clockwise.
	img, err := Sanitize(insertAfterIHDR(encodePNG(t, quadrants()), pngChunk("eXIf", []byte(exif))), Avatar)
	if err != nil {
		t.Fatal(err)
	}
	out, err := png.Decode(bytes.NewReader(img.Data))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [4]int{blue, red, white, green} { // top-left, top-right, bottom-left, bottom-right
		p := image.Pt(5+10*(i%2), 10+20*(i/2))
		if got := color.NRGBAModel.Convert(out.At(p.X, p.Y)).(color.NRGBA); got != quadrantColors[want] {
			t.Errorf("PNG: size %v, pixel %v is %v, want %v", out.Bounds().Size(), p, got, quadrantColors[want])
		}
	}
	if bytes.Contains(img.Data, []byte("eXIf")) {
		t.Error("the PNG output still has its eXIf chunk")
	}

	// WebP: the 4x2 fixture in an extended (VP8X) container with an EXIF
	// chunk, both with and without the "Exif\0\0" prefix some writers add.
	vp8l := webpFixture(t)[12:]
	for _, payload := range []string{exif, "Exif\x00\x00" + exif} {
		vp8x := []byte{0x08, 0, 0, 0, 3, 0, 0, 1, 0, 0} // EXIF flag; canvas 4x2 (each less one, 24 bits)
		body := append([]byte("WEBPVP8X"), binary.LittleEndian.AppendUint32(nil, uint32(len(vp8x)))...)
		body = append(append(body, vp8x...), vp8l...)
		body = append(append(body, "EXIF"...), binary.LittleEndian.AppendUint32(nil, uint32(len(payload)))...)
		body = append(body, payload...)
		if len(payload)%2 == 1 {
			body = append(body, 0)
		}
		file := append(append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(len(body)))...), body...)
		img, err := Sanitize(file, Avatar)
		if err != nil {
			t.Fatal(err)
		}
		out, err := png.Decode(bytes.NewReader(img.Data))
		if err != nil {
			t.Fatal(err)
		}
		if b := out.Bounds(); b.Dx() != 2 || b.Dy() != 4 {
			t.Fatalf("WebP turned: %v, want 2x4", b.Size())
		}
		// Turned clockwise, the upright picture's row y is the stored
		// column y read from the bottom row up.
		for y := range 4 {
			for x := range 2 {
				want := webp4x2Colors[(1-x)*4+y]
				if got := color.NRGBAModel.Convert(out.At(x, y)).(color.NRGBA); got != want {
					t.Errorf("WebP (%d-byte EXIF): pixel (%d,%d) is %v, want %v", len(payload), x, y, got, want)
				}
			}
		}
	}
}

func TestSanitizeFitsTurnedPhotosInTheBox(t *testing.T) {
	// A 1000x500 landscape stored for a portrait photo: upright it is
	// 500x1000, so the avatar box makes it 256x512.
	data := jpegWithAPP1(encodeJPEG(t, blocks(1000, 500)), exifOrientation(binary.BigEndian, 6))
	img, err := Sanitize(data, Avatar)
	if err != nil {
		t.Fatal(err)
	}
	if img.Width != 256 || img.Height != 512 {
		t.Errorf("size %dx%d, want 256x512", img.Width, img.Height)
	}
}

func TestSanitizeIgnoresDamagedOrientation(t *testing.T) {
	good := exifOrientation(binary.BigEndian, 6)
	plain := encodeJPEG(t, quadrants())
	for name, payload := range map[string]string{
		"truncated IFD":       good[:len(good)-12],
		"IFD offset past end": good[:10] + "\x00\x00\xff\xff" + good[14:],
		"value out of range":  exifOrientation(binary.BigEndian, 9),
		"not TIFF":            "Exif\x00\x00XX\x00\x2a\x00\x00\x00\x08",
	} {
		img, err := Sanitize(jpegWithAPP1(plain, payload), Avatar)
		if err != nil {
			t.Errorf("%s: want the upload accepted, got %v", name, err)
			continue
		}
		if img.Width != 40 || img.Height != 20 {
			t.Errorf("%s: size %dx%d, want 40x20 as stored", name, img.Width, img.Height)
		}
	}
}

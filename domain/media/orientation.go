package media

import (
	"encoding/binary"
	"image"
	"image/draw"
)

// Phones store photos as the sensor saw them and record in EXIF how to turn
// them upright (tag 0x0112, Orientation). Re-encoding drops EXIF, so the
// turn is applied to the pixels instead; otherwise a portrait taken on a
// phone would show on its side.

// orientation values, as EXIF numbers them: how the stored picture must be
// turned to be upright.
const (
	orientNormal     = 1
	orientMirror     = 2 // mirror left-right
	orientRotate180  = 3
	orientFlip       = 4 // mirror top-bottom
	orientTranspose  = 5 // mirror along the main diagonal
	orientRotate90   = 6 // 90 degrees clockwise
	orientTransverse = 7 // mirror along the other diagonal
	orientRotate270  = 8 // 90 degrees counter-clockwise
)

// swapsAxes reports whether an orientation turns a w x h picture into h x w.
func swapsAxes(o int) bool { return o >= orientTranspose && o <= orientRotate270 }

// jpegOrientation returns the EXIF orientation of a JPEG, or orientNormal
// when it has none or its EXIF is damaged: a bad tag costs the turn, never
// the upload. It walks the segments before the image data and reads only
// IFD0, bounds-checking every offset (the bytes are the uploader's).
func jpegOrientation(data []byte) int {
	for i := 2; i+4 <= len(data) && data[i] == 0xFF; {
		marker := data[i+1]
		if marker == 0xDA || marker == 0xD9 { // start of scan, end of image
			break
		}
		n := int(binary.BigEndian.Uint16(data[i+2:]))
		if n < 2 || i+2+n > len(data) {
			break
		}
		seg := data[i+4 : i+2+n]
		if marker == 0xE1 && len(seg) >= 6 && string(seg[:6]) == "Exif\x00\x00" {
			return tiffOrientation(seg[6:])
		}
		i += 2 + n
	}
	return orientNormal
}

// pngOrientation returns the EXIF orientation of a PNG's eXIf chunk, or
// orientNormal, as jpegOrientation does.
func pngOrientation(data []byte) int {
	for i := 8; i+12 <= len(data); {
		n := int(binary.BigEndian.Uint32(data[i:]))
		if n < 0 || n > len(data)-i-12 {
			break
		}
		if string(data[i+4:i+8]) == "eXIf" {
			return tiffOrientation(data[i+8 : i+8+n])
		}
		i += 12 + n // length, type, data, CRC
	}
	return orientNormal
}

// webpOrientation returns the EXIF orientation of a WebP's EXIF chunk (an
// extended WebP), or orientNormal, as jpegOrientation does. Some writers
// start the chunk with JPEG's "Exif\0\0" prefix; both forms are read.
func webpOrientation(data []byte) int {
	for i := 12; i+8 <= len(data); {
		n := int(binary.LittleEndian.Uint32(data[i+4:]))
		if n < 0 || n > len(data)-i-8 {
			break
		}
		if string(data[i:i+4]) == "EXIF" {
			chunk := data[i+8 : i+8+n]
			if len(chunk) >= 6 && string(chunk[:6]) == "Exif\x00\x00" {
				chunk = chunk[6:]
			}
			return tiffOrientation(chunk)
		}
		i += 8 + n + n%2 // chunks are padded to an even size
	}
	return orientNormal
}

// tiffOrientation reads the Orientation tag of IFD0 of a TIFF header.
func tiffOrientation(t []byte) int {
	if len(t) < 8 {
		return orientNormal
	}
	var order binary.ByteOrder
	switch string(t[:2]) {
	case "II":
		order = binary.LittleEndian
	case "MM":
		order = binary.BigEndian
	default:
		return orientNormal
	}
	if order.Uint16(t[2:]) != 42 {
		return orientNormal
	}
	ifd := int64(order.Uint32(t[4:]))
	if ifd < 8 || ifd+2 > int64(len(t)) {
		return orientNormal
	}
	count := int64(order.Uint16(t[ifd:]))
	for e := ifd + 2; e+12 <= int64(len(t)) && e < ifd+2+count*12; e += 12 {
		const tagOrientation, typeShort = 0x0112, 3
		if order.Uint16(t[e:]) != tagOrientation {
			continue
		}
		if order.Uint16(t[e+2:]) != typeShort || order.Uint32(t[e+4:]) != 1 {
			return orientNormal
		}
		if o := int(order.Uint16(t[e+8:])); o >= orientNormal && o <= orientRotate270 {
			return o
		}
		return orientNormal
	}
	return orientNormal
}

// orient returns src turned upright according to the EXIF orientation o.
func orient(src image.Image, o int) image.Image {
	if o <= orientNormal || o > orientRotate270 {
		return src
	}
	sb := src.Bounds()
	w, h := sb.Dx(), sb.Dy()
	in := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(in, in.Bounds(), src, sb.Min, draw.Src)
	dw, dh := w, h
	if swapsAxes(o) {
		dw, dh = h, w
	}
	out := image.NewRGBA(image.Rect(0, 0, dw, dh))
	for y := range h {
		for x := range w {
			var dx, dy int
			switch o {
			case orientMirror:
				dx, dy = w-1-x, y
			case orientRotate180:
				dx, dy = w-1-x, h-1-y
			case orientFlip:
				dx, dy = x, h-1-y
			case orientTranspose:
				dx, dy = y, x
			case orientRotate90:
				dx, dy = h-1-y, x
			case orientTransverse:
				dx, dy = h-1-y, w-1-x
			case orientRotate270:
				dx, dy = y, w-1-x
			}
			copy(out.Pix[out.PixOffset(dx, dy):][:4], in.Pix[in.PixOffset(x, y):][:4])
		}
	}
	return out
}

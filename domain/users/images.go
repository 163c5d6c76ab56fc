package users

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain"
	"wager/domain/media"
)

// Image is a stored profile image. Its content never changes, so its URL
// can be cached forever.
type Image struct {
	bun.BaseModel `bun:"table:images"`

	ID          string    `bun:"id,pk,type:uuid,default:gen_random_uuid()"`
	OwnerID     string    `bun:"owner_id,type:uuid"`
	Kind        string    `bun:"kind"`
	ContentType string    `bun:"content_type"`
	Data        []byte    `bun:"data"`
	Width       int       `bun:"width"`
	Height      int       `bun:"height"`
	CreatedAt   time.Time `bun:"created_at"`
}

// SetImage sanitises an uploaded image (see media.Sanitize), stores it as
// the user's avatar or cover and deletes the one it replaces. It returns
// the sanitiser's VALIDATION_ERROR or PAYLOAD_TOO_LARGE for bad uploads.
func (s *Service) SetImage(ctx context.Context, userID string, kind media.Kind, upload []byte) (User, error) {
	img, err := media.Sanitize(upload, kind)
	if err != nil {
		return User{}, err
	}
	column := "avatar_image_id"
	if kind == media.Cover {
		column = "cover_image_id"
	}
	var u User
	err = db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		if err := tx.NewSelect().Model(&u).Where("id = ?", userID).For("UPDATE").Scan(ctx); err != nil {
			return fmt.Errorf("lock user %s: %w", userID, err)
		}
		// Copy the id: scanning the update below reuses the pointer.
		var old string
		if current := map[media.Kind]*string{media.Avatar: u.AvatarImageID, media.Cover: u.CoverImageID}[kind]; current != nil {
			old = *current
		}
		row := Image{OwnerID: userID, Kind: string(kind), ContentType: img.ContentType, Data: img.Data,
			Width: img.Width, Height: img.Height, CreatedAt: s.now()}
		if _, err := tx.NewInsert().Model(&row).Returning("id").Exec(ctx); err != nil {
			return fmt.Errorf("store the %s image of user %s: %w", kind, userID, err)
		}
		if _, err := tx.NewUpdate().Model(&u).Set("? = ?", bun.Ident(column), row.ID).
			Set("updated_at = ?", s.now()).WherePK().Returning("*").Exec(ctx); err != nil {
			return fmt.Errorf("set the %s image of user %s to %s: %w", kind, userID, row.ID, err)
		}
		if old != "" {
			if _, err := tx.NewDelete().Model((*Image)(nil)).Where("id = ?", old).Exec(ctx); err != nil {
				return fmt.Errorf("delete the replaced %s image %s: %w", kind, old, err)
			}
		}
		return nil
	})
	return u, err
}

// ImageByID returns a stored image, or NOT_FOUND.
func (s *Service) ImageByID(ctx context.Context, id string) (Image, error) {
	var img Image
	id, ok := domain.CanonicalID(id)
	if !ok {
		return img, domain.Errorf(domain.CodeNotFound, "no such image")
	}
	err := s.db.NewSelect().Model(&img).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return img, domain.Errorf(domain.CodeNotFound, "no such image")
	}
	if err != nil {
		return img, fmt.Errorf("read image %s: %w", id, err)
	}
	return img, nil
}

-- Berserk: the ended games in which a player halved their time; the
-- games lost on time in a row (two pause the player); why a player is
-- paused, in words for people.
ALTER TABLE tournament_players ADD COLUMN berserks integer NOT NULL DEFAULT 0,
    ADD COLUMN time_losses integer NOT NULL DEFAULT 0,
    ADD COLUMN paused_reason text;
UPDATE tournament_players SET paused_reason = 'paused by the player' WHERE paused;

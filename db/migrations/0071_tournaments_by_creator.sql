-- A player's arenas of the last 24 hours are counted at every creation
-- (TOURNAMENT_CREATE_PER_DAY).
CREATE INDEX tournaments_creator_idx ON tournaments (created_by, created_at);

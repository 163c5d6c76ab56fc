-- Every settings object names its game type (gameType), the member by
-- which clients tell one game's settings from another's.
UPDATE lobbies SET settings = settings || jsonb_build_object('gameType', game_type)
    WHERE jsonb_typeof(settings) = 'object' AND NOT settings ? 'gameType';
UPDATE games SET settings = settings || jsonb_build_object('gameType', game_type)
    WHERE jsonb_typeof(settings) = 'object' AND NOT settings ? 'gameType';
UPDATE challenges SET settings = settings || jsonb_build_object('gameType', game_type)
    WHERE jsonb_typeof(settings) = 'object' AND NOT settings ? 'gameType';
UPDATE tournaments SET settings = settings || jsonb_build_object('gameType', game_type)
    WHERE jsonb_typeof(settings) = 'object' AND NOT settings ? 'gameType';

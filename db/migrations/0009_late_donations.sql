-- A donation confirmed after its game ended is refunded to the donor and is
-- not part of the pot.
ALTER TABLE donations ADD COLUMN late boolean NOT NULL DEFAULT false;

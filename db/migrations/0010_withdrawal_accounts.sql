-- A withdrawal that had to open the user's USDC token account (the
-- platform pays that rent once per user).
ALTER TABLE withdrawals ADD COLUMN opened_account boolean NOT NULL DEFAULT false;

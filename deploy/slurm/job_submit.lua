--[[
hyperfed's placement window for a Slurm site (docs/adapters.md, "Placement
at arrival (job_submit.lua)").

slurmctld's job_submit/lua plugin (Debian 12: slurm-wlm-basic-plugins) runs
slurm_job_submit for every job submitted at this cluster, before the job is
created. For a new batch job this script:
  - gives it a begin time WINDOW seconds ahead (unless the job already asks
    for a later one), so it cannot start here during the window, and
  - writes "hyperfed-window=<end of the window, epoch seconds>" into its
    AdminComment, which only Slurm administrators can set or change, so
    hyperfedd knows the begin time is the window's and not the user's.
hyperfedd, which sees every new pending job within a heartbeat, decides
where the job starts first during the window: a job it keeps gets its window
ended at once (`scontrol update JobId=... StartTime=now`; the AdminComment
then reads "hyperfed-window=kept"), a job it sends elsewhere is held and
moved. With hyperfedd down, nothing waits on it: the window ends by itself
and the job starts here at Slurm's next scheduling pass.

No window for:
  - jobs hyperfed itself submitted here (moved jobs: their Comment is in
    the adapter's format, "hyperfed1" or "hyperfed1;..."), placed already,
    and the adapter's `sbatch --test-only` probes, which stand for such jobs.
    A user who writes such a Comment only opts out of placement;
  - jobs without a batch script (srun, salloc): someone waits at a terminal,
    and hyperfed never moves them;
  - jobs outside the configured partitions (see below), which hyperfed does
    not manage.
The script makes no network call and reads no file while a job is submitted:
its settings are read once, when slurmctld loads it.

Install: copy (or link) this file as job_submit.lua next to slurm.conf, add
  JobSubmitPlugins=lua
to slurm.conf and restart slurmctld. Settings go in hyperfed-placement.conf
in the same folder (optional; lines "key = value", '#' starts a comment):
  window_seconds = 5      # length of the window; 0 turns it off
  partitions = batch,long # only jobs in these partitions ("" = all)
slurmctld reloads this script when its modification time changes; after
editing hyperfed-placement.conf, `touch job_submit.lua`. A bad setting is
an error in slurmctld's log: at start slurmctld then refuses to load the
plugin, on a reload it keeps the previous script.
--]]

local CONF_NAME = "hyperfed-placement.conf"
local DEFAULT_WINDOW_SECONDS = 5
-- The first field of the Comment hyperfed's slurm adapter gives the jobs it
-- submits and its probes (kCommentPrefix, daemon/scheduler/slurm_adapter.cc).
local HYPERFED_COMMENT = "hyperfed1"
-- The AdminComment token; daemon/scheduler/slurm_adapter.cc reads it.
local WINDOW_TOKEN = "hyperfed-window="

local window_seconds = DEFAULT_WINDOW_SECONDS
local partitions = nil -- nil: every partition; else a set of names

local function trim(s)
	return (string.gsub(s, "^%s*(.-)%s*$", "%1"))
end

-- The folder this script was loaded from (slurmctld loads it by its path
-- next to slurm.conf).
local function script_dir()
	local src = debug.getinfo(1, "S").source
	if string.sub(src, 1, 1) ~= "@" then
		return "."
	end
	local dir = string.match(string.sub(src, 2), "^(.*)/[^/]*$")
	return dir or "."
end

local function load_settings()
	local path = script_dir() .. "/" .. CONF_NAME
	local f = io.open(path, "r")
	if not f then
		return -- no file: the defaults
	end
	local n = 0
	for line in f:lines() do
		n = n + 1
		line = trim(string.gsub(line, "#.*$", ""))
		if line ~= "" then
			local key, value = string.match(line, "^([%w_]+)%s*=%s*(.-)$")
			if not key then
				f:close()
				error(string.format("%s:%d: expected \"key = value\", got \"%s\"", path, n, line), 0)
			end
			if key == "window_seconds" then
				if not string.match(value, "^%d+$") or tonumber(value) > 86400 then
					f:close()
					error(string.format("%s:%d: window_seconds must be a whole number of seconds from 0 to 86400, got \"%s\"",
						path, n, value), 0)
				end
				window_seconds = tonumber(value)
			elseif key == "partitions" then
				partitions = nil
				for name in string.gmatch(value, "[^,%s]+") do
					partitions = partitions or {}
					partitions[name] = true
				end
			else
				f:close()
				error(string.format("%s:%d: unknown setting \"%s\" (known: window_seconds, partitions)", path, n, key), 0)
			end
		end
	end
	f:close()
end

-- Whether the job asks for a partition hyperfed manages (the default
-- partition when it names none).
local function managed_partition(job_desc, part_list)
	if partitions == nil then
		return true
	end
	local asked = job_desc.partition
	if asked == nil then
		for name, part in pairs(part_list) do
			if part.flag_default == 1 then
				asked = name
			end
		end
	end
	if asked == nil then
		return false
	end
	for name in string.gmatch(asked, "[^,]+") do
		if partitions[name] then
			return true
		end
	end
	return false
end

function slurm_job_submit(job_desc, part_list, submit_uid)
	if window_seconds <= 0 then
		return slurm.SUCCESS
	end
	local comment = job_desc.comment
	if comment ~= nil and (comment == HYPERFED_COMMENT or
			string.sub(comment, 1, string.len(HYPERFED_COMMENT) + 1) == HYPERFED_COMMENT .. ";") then
		return slurm.SUCCESS -- hyperfed submitted it: placed already
	end
	if job_desc.script == nil then
		return slurm.SUCCESS -- srun or salloc
	end
	if not managed_partition(job_desc, part_list) then
		return slurm.SUCCESS
	end
	local until_time = os.time() + window_seconds
	local begin = job_desc.begin_time
	if begin ~= nil and begin >= until_time then
		return slurm.SUCCESS -- the user's own begin time is later
	end
	job_desc.begin_time = until_time
	local token = WINDOW_TOKEN .. string.format("%d", until_time)
	local admin = job_desc.admin_comment
	if admin == nil or admin == "" then
		job_desc.admin_comment = token
	else
		job_desc.admin_comment = admin .. ";" .. token
	end
	return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	return slurm.SUCCESS
end

load_settings()
slurm.log_info("hyperfed placement window: %d s%s", window_seconds,
	partitions and " (listed partitions only)" or "")
return slurm.SUCCESS

-- Slurm's job_submit/lua script for PluS's lending (README, "Lending idle
-- reserved nodes"): an AR's idle nodes are lent through the reservation
-- L<id> beside its R<id>, and only preemptible jobs may run there. A
-- reservation's PartitionName does not restrict its jobs' partition, so
-- this rule does: a job naming a lending reservation runs in the lending
-- partition (given it when it names none), and is refused otherwise, at
-- submission and at every change. Installed as job_submit.lua beside
-- slurm.conf, with JobSubmitPlugins=lua; LEND must be the partition of
-- plus.yaml's slurm: lend_partition.
local LEND = "lend"

local function lending(reservations)
   for name in string.gmatch(reservations or "", "[^,]+") do
      if string.match(name, "^L%d+$") then
         return true
      end
   end
   return false
end

local function refused(reservations, partition)
   slurm.log_user("reservation %s lends an advance reservation's idle nodes to "
      .. "preemptible jobs only: submit to partition %s (-p %s), not %s",
      reservations, LEND, LEND, partition)
   return slurm.ESLURM_ACCESS_DENIED or slurm.ERROR
end

function slurm_job_submit(job_desc, part_list, submit_uid)
   if not lending(job_desc.reservation) then
      return slurm.SUCCESS
   end
   if job_desc.partition == nil then
      job_desc.partition = LEND
   elseif job_desc.partition ~= LEND then
      return refused(job_desc.reservation, job_desc.partition)
   end
   return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_ptr, part_list, modify_uid)
   local reservations = job_desc.reservation or job_ptr.resv_name
   local partition = job_desc.partition or job_ptr.partition
   if lending(reservations) and partition ~= LEND then
      return refused(reservations, partition)
   end
   return slurm.SUCCESS
end

return slurm.SUCCESS

{{ config(materialized='table') }}

{#
    One row per update sent as two messages (a before half and an after half sharing a sequence id),
    with the offsets of both. Rebuilt over the whole staging table on every run, so a pair whose second
    half lands in a later run appears then, with that run's ingested_at. Halves still waiting for their
    partner are in staging only.
#}
{{ aliyun_update_pairs(ref('stg_aliyun_datahub_tuple__messages')) }}
